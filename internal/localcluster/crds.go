package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// crdEstablishTimeout bounds the wait for one CRD to be served; the API server usually
// establishes a CRD within a second.
const crdEstablishTimeout = 30 * time.Second

// InstallCRDs creates or updates every CustomResourceDefinition in dir's *.yaml files, then
// waits until each is Established and its names are accepted. An error names the CRD and
// the API server's reason.
func (c *Cluster) InstallCRDs(ctx context.Context, dir string) error {
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if err := applyCRD(ctx, crdClient, crd); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitCRDServed(ctx, crdClient, crd.Name); err != nil {
			return err
		}
	}
	c.log.Info("CRDs installed", "dir", dir, "count", len(crds))
	return nil
}

// crdInterface is the part of the CRD client InstallCRDs uses.
type crdInterface interface {
	Create(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

// applyCRD creates crd, or replaces the stored one's spec when it exists already.
func applyCRD(ctx context.Context, client crdInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := client.Create(ctx, crd, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	existing, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get CRD %s: %w", crd.Name, err)
	}
	crd.ResourceVersion = existing.ResourceVersion
	if _, err := client.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update CRD %s: %w", crd.Name, err)
	}
	return nil
}

// waitCRDServed waits until the CRD named name is Established with its names accepted, and
// fails fast when the API server says the names conflict.
func waitCRDServed(ctx context.Context, client crdInterface, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("get CRD %s: %w", name, err)
		}
		names := condition(crd, apiextensionsv1.NamesAccepted)
		if names != nil && names.Status == apiextensionsv1.ConditionFalse {
			return false, fmt.Errorf("CRD %s: condition NamesAccepted is False: %s", name, names.Message)
		}
		established := condition(crd, apiextensionsv1.Established)
		if names != nil && names.Status == apiextensionsv1.ConditionTrue &&
			established != nil && established.Status == apiextensionsv1.ConditionTrue {
			return true, nil
		}
		last = describeConditions(crd)
		return false, nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("CRD %s not served (conditions: %s): %w", name, last, err)
	}
	return err
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

func describeConditions(crd *apiextensionsv1.CustomResourceDefinition) string {
	var b bytes.Buffer
	for i, cond := range crd.Status.Conditions {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s=%s %s", cond.Type, cond.Status, cond.Message)
	}
	if b.Len() == 0 {
		return "none yet"
	}
	return b.String()
}

// readCRDs decodes every CRD in dir's *.yaml files, in file-name order. A file may hold
// several documents; any object that is not a CRD is an error.
func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list CRDs in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml CRD files in %s", dir)
	}
	slices.Sort(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		fileCRDs, err := readCRDFile(file)
		if err != nil {
			return nil, err
		}
		crds = append(crds, fileCRDs...)
	}
	return crds, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := decoder.Decode(crd)
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue // an empty document between `---` separators
		}
		if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("%s: %s %s %q is not an %s CustomResourceDefinition",
				path, crd.APIVersion, crd.Kind, crd.Name, apiextensionsv1.SchemeGroupVersion)
		}
		crds = append(crds, crd)
	}
}
