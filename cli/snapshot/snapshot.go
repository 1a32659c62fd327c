// Package snapshot is the `joinery snapshot` file: what joinery's engine reads of a cluster
// (Karpenter's kinds, the pods and what constrains them, the instance-type catalog with prices
// and the unavailable offerings), captured from a live cluster and read back offline. It never
// holds Secrets, ConfigMap data or environment values.
package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	karpv1alpha1 "github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
)

// APIVersion and Kind identify a snapshot file.
const (
	APIVersion = "joinery.dev/v1alpha1"
	Kind       = "ClusterSnapshot"
)

// Format is the snapshot layout this joinery writes. Format 2 records the provider's catalog
// as it lists it (reserved offerings included, no NodeOverlay applied), so that the reader
// applies the NodeOverlays and the ReservedCapacity gate it simulates with, and the
// PodTemplates and workloads CapacityBuffers reference. A file without a format (1, written
// before) holds the catalog with the capturing machine's overlays and gates already applied
// and no PodTemplates; it is still read (see Snapshot.Legacy).
const Format = 2

// fileInArchive is the snapshot's name inside a .tar.gz.
const fileInArchive = "cluster.json"

// Snapshot is one consistent-enough read of a cluster: every list is taken once, sorted by
// namespace and name so that two snapshots of the same cluster are the same file.
type Snapshot struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// TakenAt is when the capture started; offline commands evaluate budgets and expiry at
	// this time, so a simulation of a file always gives the same answer.
	TakenAt metav1.Time `json:"takenAt"`
	// Format is the layout (the constant Format when written by this joinery; 0 before).
	Format int `json:"format,omitempty"`
	// CloudProvider names the provider whose catalog was recorded.
	CloudProvider string `json:"cloudProvider,omitempty"`

	NodePools       []karpv1.NodePool                    `json:"nodePools,omitempty"`
	NodeClaims      []karpv1.NodeClaim                   `json:"nodeClaims,omitempty"`
	NodeClasses     []unstructured.Unstructured          `json:"nodeClasses,omitempty"`
	NodeOverlays    []karpv1alpha1.NodeOverlay           `json:"nodeOverlays,omitempty"`
	CapacityBuffers []autoscalingv1alpha1.CapacityBuffer `json:"capacityBuffers,omitempty"`

	Nodes                  []corev1.Node                  `json:"nodes,omitempty"`
	Pods                   []corev1.Pod                   `json:"pods,omitempty"`
	PodDisruptionBudgets   []policyv1.PodDisruptionBudget `json:"podDisruptionBudgets,omitempty"`
	PersistentVolumes      []corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	PersistentVolumeClaims []corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	StorageClasses         []storagev1.StorageClass       `json:"storageClasses,omitempty"`
	CSINodes               []storagev1.CSINode            `json:"csiNodes,omitempty"`
	DaemonSets             []appsv1.DaemonSet             `json:"daemonSets,omitempty"`
	// PodTemplates, Deployments, StatefulSets and ReplicaSets are those CapacityBuffers
	// reference (spec.podTemplateRef, status.podTemplateRef, spec.scalableRef), so a buffer
	// resolves offline as joinery-controller resolves it; no other workload is recorded.
	PodTemplates []corev1.PodTemplate `json:"podTemplates,omitempty"`
	Deployments  []appsv1.Deployment  `json:"deployments,omitempty"`
	StatefulSets []appsv1.StatefulSet `json:"statefulSets,omitempty"`
	ReplicaSets  []appsv1.ReplicaSet  `json:"replicaSets,omitempty"`
	// Namespaces carry their names and labels only (pod affinity's namespaceSelector).
	Namespaces []corev1.Namespace `json:"namespaces,omitempty"`

	// Catalogs are the instance types the cloud provider offers each NodePool, with offerings
	// and prices; NodePools that see the same catalog share one entry.
	Catalogs []Catalog `json:"catalogs,omitempty"`
	// UnavailableOfferings are the offerings joinery-controller recorded as failing to launch.
	UnavailableOfferings []UnavailableOffering `json:"unavailableOfferings,omitempty"`
	// UnavailableOfferingsNamespace is where the controller keeps that record.
	UnavailableOfferingsNamespace string `json:"unavailableOfferingsNamespace,omitempty"`
}

// UnavailableOffering is one entry of the controller's record.
type UnavailableOffering struct {
	CapacityType string      `json:"capacityType"`
	InstanceType string      `json:"instanceType"`
	Zone         string      `json:"zone"`
	Until        metav1.Time `json:"until"`
}

// New returns an empty snapshot taken at t.
func New(t time.Time) *Snapshot {
	return &Snapshot{APIVersion: APIVersion, Kind: Kind, Format: Format, TakenAt: metav1.NewTime(t.UTC().Truncate(time.Second))}
}

// ErrLegacy says what a snapshot written before Format 2 cannot do.
var ErrLegacy = errors.New("this snapshot was written by an older joinery: its catalog has the cluster's NodeOverlays " +
	"and the ReservedCapacity gate already applied, and it holds no PodTemplates or workloads for CapacityBuffers; " +
	"take a new one with joinery snapshot")

// Legacy reports whether s was written before Format 2: its catalog is used as recorded
// (overlays and gates are not applied again), and NodeOverlay and CapacityBuffer changes
// cannot be simulated on it.
func (s *Snapshot) Legacy() bool { return s.Format < 2 }

// Encode writes s as indented JSON.
func (s *Snapshot) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding snapshot: %w", err)
	}
	return nil
}

// Decode reads a snapshot and checks that it is one.
func Decode(r io.Reader) (*Snapshot, error) {
	var s Snapshot
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("decoding snapshot: %w", err)
	}
	if s.APIVersion != APIVersion || s.Kind != Kind {
		return nil, fmt.Errorf("not a joinery snapshot: apiVersion %q kind %q, want %s %s", s.APIVersion, s.Kind, APIVersion, Kind)
	}
	if s.Format > Format {
		return nil, fmt.Errorf("snapshot format %d is newer than this joinery reads (%d): use a newer joinery", s.Format, Format)
	}
	return &s, nil
}

// isArchive reports whether path names a gzipped tar.
func isArchive(path string) bool {
	return strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz")
}

// WriteFile writes s to path: JSON, or a gzipped tar holding cluster.json when path ends in
// .tar.gz or .tgz.
func (s *Snapshot) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		return err
	}
	data := buf.Bytes()
	if isArchive(path) {
		var err error
		if data, err = archive(data, s.TakenAt.Time); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return nil
}

func archive(data []byte, modTime time.Time) ([]byte, error) {
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	hdr := &tar.Header{Name: fileInArchive, Mode: 0o600, Size: int64(len(data)), ModTime: modTime, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("archiving snapshot: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return nil, fmt.Errorf("archiving snapshot: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("archiving snapshot: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("compressing snapshot: %w", err)
	}
	return out.Bytes(), nil
}

// ReadFile reads a snapshot written by WriteFile (JSON or .tar.gz).
func ReadFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading snapshot: %w", err)
	}
	defer f.Close()
	if !isArchive(path) {
		s, err := Decode(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no %s in the archive", path, fileInArchive)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if hdr.Name == fileInArchive {
			s, err := Decode(tr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return s, nil
		}
	}
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() (*Snapshot, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("copying snapshot: %w", err)
	}
	var out Snapshot
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("copying snapshot: %w", err)
	}
	return &out, nil
}
