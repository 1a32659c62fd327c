// Package localcluster runs a real Kubernetes cluster on 127.0.0.1 from binaries built by
// hack/tools.sh and `make build`: etcd and kube-apiserver, plus the Options.Components —
// kube-controller-manager, kwok (the kubelets of nodes annotated kwok.x-k8s.io/node=fake),
// joinery-scheduler and joinery-controller — each its own process with its own log file and
// readiness check, on free ports so that several clusters can run side by side. The
// integration tests, the e2e suites, `make cluster` and `make run` build on it.
//
// With Options.CloudProvider CloudProviderAWS (and AWSComponents), the AWS emulator
// (cmd/awsemulator) runs too, started before joinery's binaries, which it serves as their AWS
// endpoint; its node agent registers the instances they launch as kwok-managed Nodes.
//
// With kwok among the components, the process that started the cluster also stands in for the
// Amazon EBS CSI driver (ebscsi.go): the CSINode of every node, with its instance type's attach
// limit, and volumes for claims of ebs.csi.aws.com StorageClasses; and for the DRA drivers
// (dradriver.go): the ResourceSlices of every node of a kwok catalog type with GPUs or Neuron
// devices, the ones the simulation predicts for the type.
//
// Layout of Options.Dir:
//
//	pki/               CA, serving and admin certificates, service-account key
//	etcd/              etcd's data
//	admin.kubeconfig   admin credentials (system:masters), certificates embedded
//	                   (Options.KubeconfigPath moves it)
//	kwok/, joinery-scheduler/, kube-controller-manager/
//	                   generated configuration and serving certificates of those components
//	logs/<name>.log    one log per component, appended across runs (Options.LogsDir moves them)
package localcluster
