package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newSnapshotCommand(cluster *clusterFlags) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "snapshot -o FILE",
		Short: "Write what joinery's engine needs of the cluster to FILE (.json, or .tar.gz)",
		Long: `snapshot reads the cluster the kubeconfig names and writes a file that simulate, explain and
cost read offline: NodePools, NodeClaims, node classes, NodeOverlays, CapacityBuffers, Nodes,
Pods, PodDisruptionBudgets, PersistentVolumes and claims, StorageClasses, CSINodes,
DaemonSets, namespaces' labels, the PodTemplates and workloads CapacityBuffers reference, the
instance types of each NodePool with offerings and prices as --cloud-provider lists them
(reserved offerings included, no NodeOverlay applied: simulate, explain and cost apply the
recorded NodeOverlays and the gates they run with) and the unavailable offerings.
Secrets are never read; ConfigMap data, environment values, commands and arguments are never
written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("-o FILE is required (cluster.json or cluster.tar.gz)")
			}
			s, err := cluster.capture(cmd.Context())
			if err != nil {
				return err
			}
			if err := s.WriteFile(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d nodepools, %d nodeclaims, %d nodes, %d pods\n", out, len(s.NodePools), len(s.NodeClaims), len(s.Nodes), len(s.Pods))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write: .json, or .tar.gz for a gzipped tar holding cluster.json")
	return cmd
}
