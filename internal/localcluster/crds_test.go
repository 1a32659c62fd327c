package localcluster

import (
	"strings"
	"testing"
)

func TestReadCRDs(t *testing.T) {
	cases := []struct {
		name      string
		files     map[string]string
		wantNames []string
		wantErr   string
	}{
		{
			name:      "one CRD per file, sorted by file name",
			files:     map[string]string{"b.yaml": gadgetCRD, "a.yaml": "---\n" + widgetCRD},
			wantNames: []string{"widgets.tests.joinery.dev", "gadgets.tests.joinery.dev"},
		},
		{
			name:      "several documents in one file",
			files:     map[string]string{"all.yaml": widgetCRD + "---\n---\n" + gadgetCRD, "notes.txt": "ignored"},
			wantNames: []string{"widgets.tests.joinery.dev", "gadgets.tests.joinery.dev"},
		},
		{
			name:    "not a CRD",
			files:   map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
			wantErr: `ConfigMap "x" is not an apiextensions.k8s.io/v1 CustomResourceDefinition`,
		},
		{
			name:    "no YAML files",
			files:   map[string]string{"README.md": "#"},
			wantErr: "no *.yaml CRD files",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crds, err := readCRDs(writeFiles(t, tc.files))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("readCRDs = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, crd := range crds {
				names = append(names, crd.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
				t.Errorf("CRDs %v, want %v", names, tc.wantNames)
			}
		})
	}
}
