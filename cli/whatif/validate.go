package whatif

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/manifests/crds"
)

// crdSchema validates one version of one CRD as the API server does on create: OpenAPI
// schema, then the x-kubernetes-validations CEL rules, over the object with the schema's
// defaults applied.
type crdSchema struct {
	structural *structuralschema.Structural
	openAPI    apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var (
	schemasOnce sync.Once
	schemas     map[schema.GroupVersionKind]*crdSchema
	schemasErr  error
)

// crdSchemas are the schemas of joinery's CRDs (manifests/crds), built once.
func crdSchemas() (map[schema.GroupVersionKind]*crdSchema, error) {
	schemasOnce.Do(func() { schemas, schemasErr = loadCRDSchemas(crds.FS) })
	return schemas, schemasErr
}

func loadCRDSchemas(files fs.FS) (map[schema.GroupVersionKind]*crdSchema, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]*crdSchema{}
	for _, name := range names {
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", name, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			s, err := newCRDSchema(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = s
		}
	}
	return out, nil
}

func newCRDSchema(v1 *apiextensionsv1.JSONSchemaProps) (*crdSchema, error) {
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("structural schema: %w", err)
	}
	openAPI, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	return &crdSchema{structural: structural, openAPI: openAPI, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// validateCRD validates u against its CRD's schema and CEL rules, after applying the
// schema's defaults to it as the API server would; an object of a kind that is no CRD of
// joinery's passes. The error names every invalid field.
func validateCRD(ctx context.Context, u *unstructured.Unstructured) error {
	all, err := crdSchemas()
	if err != nil {
		return fmt.Errorf("loading the CRDs' schemas: %w", err)
	}
	s, ok := all[u.GroupVersionKind()]
	if !ok {
		return nil
	}
	// Numbers as the API server decodes them (int64 when integral, as CEL's int wants); a
	// YAML or JSON decoder into a map gives float64.
	data, err := json.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	u.Object = obj
	structuraldefaulting.Default(u.Object, s.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, u.Object, s.openAPI)
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(ctx, nil, s.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid: %w", errs.ToAggregate())
	}
	return nil
}
