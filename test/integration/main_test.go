// Package integration tests joinery's API against a real etcd and kube-apiserver: the CRD
// schemas, their CEL rules, defaults and printer columns, as a user's kubectl meets them.
package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

// The package's one cluster, started by TestMain with every CRD in manifests/crds installed.
var (
	cluster       *localcluster.Cluster
	dynamicClient dynamic.Interface
	// restMapper maps kinds to resources from discovery; it refreshes itself when asked for
	// a kind it has not seen, so CRDs installed later are found too.
	restMapper *restmapper.DeferredDiscoveryRESTMapper
)

// cleanupTimeout bounds deleting a test's objects; t.Context is already cancelled by then.
const cleanupTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{Name: "integration", Setup: setup}))
}

// setup builds the dynamic client and the REST mapper the tests share.
func setup(_ context.Context, _ *localcluster.Cluster) error {
	var err error
	if dynamicClient, err = dynamic.NewForConfig(restConfig()); err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(restConfig())
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	restMapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient))
	return nil
}

// restConfig returns a fresh copy of the cluster's admin client configuration.
func restConfig() *rest.Config { return cluster.RESTConfig() }

// rejection is an object the API server must refuse; wantFields are substrings that must all
// appear in the server's error message (the offending field's path, e.g. "spec.weight").
type rejection struct {
	name       string
	manifest   string // YAML of one object
	wantFields []string
}

// expectRejections creates each case's object, in a subtest per case, and expects the API
// server to refuse it as invalid (422) or malformed (400), naming every wanted field. An
// object that is accepted fails its case and is deleted again.
func expectRejections(t *testing.T, cases []rejection) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.wantFields) == 0 {
				t.Fatal("the case names no field the error must mention")
			}
			obj := decodeManifest(t, tc.manifest)
			resource := resourceFor(t, obj)
			created, err := resource.Create(t.Context(), obj, metav1.CreateOptions{})
			if err == nil {
				deleteObject(t, resource, created.GetName())
				t.Fatalf("the API server accepted %s %q; want it refused naming %q", obj.GetKind(), obj.GetName(), tc.wantFields)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("create %s %q: %v (reason %s); want 422 Invalid or 400 BadRequest",
					obj.GetKind(), obj.GetName(), err, apierrors.ReasonForError(err))
			}
			message := errorMessage(err)
			for _, field := range tc.wantFields {
				if !strings.Contains(message, field) {
					t.Errorf("the error does not mention %q:\n%s", field, message)
				}
			}
		})
	}
}

// errorMessage is the API server's message plus the field and text of each cause, which
// the message usually, but not always, repeats.
func errorMessage(err error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			fmt.Fprintf(&b, "\n%s: %s", cause.Field, cause.Message)
		}
	}
	return b.String()
}

// mustApply creates the object in manifest, deletes it when the test ends, and returns it
// as stored, defaults applied. Namespaced objects without a namespace go to "default".
func mustApply(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := decodeManifest(t, manifest)
	resource := resourceFor(t, obj)
	stored, err := resource.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %q: %s", obj.GetKind(), obj.GetName(), errorMessage(err))
	}
	t.Cleanup(func() { deleteObject(t, resource, stored.GetName()) })
	return stored
}

// decodeManifest parses the YAML of one object. Integers stay int64, as the API server
// returns them.
func decodeManifest(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := utilyaml.ToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("manifest is not YAML: %v\n%s", err, manifest)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatalf("manifest is not a Kubernetes object: %v\n%s", err, manifest)
	}
	return obj
}

// resourceFor finds obj's resource through discovery and, for a namespaced kind, places obj
// in "default" when it names no namespace.
func resourceFor(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	mapping := restMappingFor(t, obj)
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return dynamicClient.Resource(mapping.Resource)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return dynamicClient.Resource(mapping.Resource).Namespace(obj.GetNamespace())
}

// restMappingFor maps obj's kind to its resource and scope.
func restMappingFor(t *testing.T, obj *unstructured.Unstructured) *meta.RESTMapping {
	t.Helper()
	gvk := obj.GroupVersionKind()
	mapping, err := restMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("the API server does not serve %s: %v", gvk, err)
	}
	return mapping
}

// deleteObject deletes name, tolerating that it is gone already.
func deleteObject(t *testing.T, resource dynamic.ResourceInterface, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := resource.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %q: %v", name, err)
	}
}
