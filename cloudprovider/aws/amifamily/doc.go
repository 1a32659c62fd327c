// Package amifamily renders the user data an EC2 instance boots with, per AMI family, and the
// launch defaults that depend on the family (block device mappings, metadata options, the
// device that backs ephemeral-storage).
//
// Generate merges spec.userData with joinery's bootstrap the way the EC2NodeClass docs describe:
//
//   - AL2: a MIME multi-part archive; the user's shell script or MIME parts come first, then a
//     part calling /etc/eks/bootstrap.sh with the cluster, node labels, taints, max pods and
//     every spec.kubelet setting as kubelet flags.
//   - AL2023: a MIME archive; the user's parts (shell, NodeConfig or MIME; their NodeConfigs
//     ahead of their scripts) first, then joinery's NodeConfig. nodeadm applies NodeConfigs in
//     order, so joinery's values win on conflict.
//   - Bottlerocket: TOML; the user's settings merged under joinery's settings.kubernetes, with
//     unknown settings.kubernetes keys and unknown top-level keys dropped.
//   - Windows2019/Windows2022/Windows2025: PowerShell; the user's commands, then Start-EKSBootstrap.ps1.
//   - Custom: the user data unchanged. The image must register its kubelet with the
//     karpenter.sh/unregistered:NoExecute taint itself, or joinery never registers the node.
//
// Parse reads generated user data back the way the node would (what kubelet is started with),
// which lets the AWS emulator register Nodes exactly as the instance would.
package amifamily
