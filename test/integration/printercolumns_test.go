package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// tableAccept is what kubectl get asks for: the server renders the rows, from the CRD's
// additionalPrinterColumns.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

const printerColumnsEC2NodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: printer-columns
spec:
  role: KarpenterNodeRole-printer-columns
  amiSelectorTerms:
  - alias: al2023@latest
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: printer-columns}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: printer-columns}
`

const printerColumnsNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: printer-columns
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: printer-columns}
      requirements: []
`

const printerColumnsNodeClaim = `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: printer-columns
  labels:
    node.kubernetes.io/instance-type: m5.large
    karpenter.sh/capacity-type: spot
    topology.kubernetes.io/zone: us-west-2a
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: printer-columns}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`

// TestPrinterColumns is `kubectl get nodepools,nodeclaims,ec2nodeclasses`: each kind shows
// Karpenter's columns, filled from the object.
func TestPrinterColumns(t *testing.T) {
	mustApply(t, printerColumnsEC2NodeClass)
	mustApply(t, printerColumnsNodePool)
	mustApply(t, printerColumnsNodeClaim)

	cases := []struct {
		path string // of the list, as kubectl requests it
		// wantColumns are the priority-0 columns: exactly these when exact, else at least.
		wantColumns []string
		exact       bool
		// wantCells are cells of the row of the object named printer-columns.
		wantCells map[string]string
	}{
		{
			path:        "/apis/karpenter.sh/v1/nodepools",
			wantColumns: []string{"NAME", "NODECLASS", "NODES", "READY", "AGE"},
			wantCells:   map[string]string{"NAME": "printer-columns", "NODECLASS": "printer-columns"},
		},
		{
			path:        "/apis/karpenter.sh/v1/nodeclaims",
			wantColumns: []string{"NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"},
			exact:       true,
			wantCells:   map[string]string{"NAME": "printer-columns", "TYPE": "m5.large", "CAPACITY": "spot", "ZONE": "us-west-2a"},
		},
		{
			path:        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
			wantColumns: []string{"NAME", "READY", "AGE"},
			wantCells:   map[string]string{"NAME": "printer-columns"},
		},
	}
	for _, tc := range cases {
		resource := tc.path[strings.LastIndex(tc.path, "/")+1:]
		t.Run(resource, func(t *testing.T) {
			table := getTable(t, tc.path)
			headers, rows := kubectlView(table)
			t.Logf("kubectl get %s\n%s", resource, render(headers, rows))

			if tc.exact && !slices.Equal(headers, tc.wantColumns) {
				t.Errorf("columns %q, want exactly %q", headers, tc.wantColumns)
			}
			for _, want := range tc.wantColumns {
				if !slices.Contains(headers, want) {
					t.Errorf("columns %q lack %q", headers, want)
				}
			}

			row := rowNamed(headers, rows, "printer-columns")
			if row == nil {
				t.Fatalf("no row for printer-columns in %q", rows)
			}
			for column, want := range tc.wantCells {
				if i := slices.Index(headers, column); i < 0 || row[i] != want {
					t.Errorf("cell %s = %q, want %q", column, cellAt(row, i), want)
				}
			}
		})
	}
}

// TestNodeClaimWideColumns is `kubectl get nodeclaims -o wide`: Karpenter's priority-1 columns
// in Karpenter's order, ImageID first.
func TestNodeClaimWideColumns(t *testing.T) {
	table := getTable(t, "/apis/karpenter.sh/v1/nodeclaims")
	var wide []string
	for _, column := range table.ColumnDefinitions {
		if column.Priority == 1 {
			wide = append(wide, column.Name)
		}
	}
	if want := []string{"ImageID", "ID", "NodePool", "NodeClass", "Drifted"}; !slices.Equal(wide, want) {
		t.Errorf("-o wide columns %q, want %q", wide, want)
	}
}

// getTable lists path as a server-side Table, as kubectl does.
func getTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	client, err := kubernetes.NewForConfig(restConfig())
	if err != nil {
		t.Fatal(err)
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", tableAccept).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("GET %s as Table: %v: %s", path, err, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decode Table from %s: %v", path, err)
	}
	if table.Kind != "Table" {
		t.Fatalf("GET %s answered a %s, not a Table", path, table.Kind)
	}
	return table
}

// kubectlView returns what plain `kubectl get` shows of table: the priority-0 columns, their
// names upper-cased, and each row's cells as text (a missing value is blank).
func kubectlView(table *metav1.Table) (headers []string, rows [][]string) {
	var shown []int
	for i, column := range table.ColumnDefinitions {
		if column.Priority == 0 {
			shown = append(shown, i)
			headers = append(headers, strings.ToUpper(column.Name))
		}
	}
	for _, row := range table.Rows {
		cells := make([]string, 0, len(shown))
		for _, i := range shown {
			var cell any
			if i < len(row.Cells) {
				cell = row.Cells[i]
			}
			if cell == nil {
				cells = append(cells, "")
			} else {
				cells = append(cells, fmt.Sprint(cell))
			}
		}
		rows = append(rows, cells)
	}
	return headers, rows
}

// render lays the table out in aligned columns, as kubectl prints it.
func render(headers []string, rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 6, 4, 3, ' ', 0)
	fmt.Fprintln(w, strings.Join(headers, "\t"))
	for _, row := range rows {
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	w.Flush()
	return b.String()
}

// rowNamed returns the row whose NAME cell is name, or nil.
func rowNamed(headers []string, rows [][]string, name string) []string {
	column := slices.Index(headers, "NAME")
	for _, row := range rows {
		if column >= 0 && row[column] == name {
			return row
		}
	}
	return nil
}

func cellAt(row []string, i int) string {
	if i < 0 || i >= len(row) {
		return "<no such column>"
	}
	return row[i]
}
