package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// fieldManager owns the fields Apply sets, as kubectl's field manager does for kubectl apply.
const fieldManager = "joinery-localcluster"

// Applier server-side-applies multi-document YAML, as `kubectl apply --server-side` would.
type Applier struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier returns an Applier for the cluster cfg points at.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Applier{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Apply applies every object in manifests; with dryRun the API server validates and
// admits them without storing anything. An error names the object.
func (a *Applier) Apply(ctx context.Context, manifests []byte, dryRun bool) error {
	objs, err := DecodeManifests(manifests)
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range objs {
		if err := a.applyOne(ctx, obj, dryRun); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	name := fmt.Sprintf("%s %s", gvk.Kind, obj.GetName())
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset() // a CRD may have been installed since discovery was cached
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var resource dynamic.ResourceInterface = a.client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		resource = a.client.Resource(mapping.Resource).Namespace(ns)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return fmt.Errorf("%s: encode: %w", name, err)
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: new(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := resource.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("apply %s: %w", name, err)
	}
	return nil
}

// HasKind reports whether the API server serves kind in group/version, e.g. a CRD that
// arrives with a later part of joinery.
func (a *Applier) HasKind(group, version, kind string) bool {
	_, err := a.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, version)
	return err == nil
}

// DecodeManifests splits multi-document YAML into objects, skipping empty documents.
func DecodeManifests(manifests []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode manifest %d: %w", len(objs)+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
}
