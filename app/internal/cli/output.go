package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// formats are -o's values.
var formats = []string{"table", "json", "yaml"}

// outputFlag adds -o table|json|yaml to cmd.
func outputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", "table", "output format: table, json or yaml")
}

// write prints v as JSON or YAML, or calls table.
func write(w io.Writer, format string, v any, table func(*printer)) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "table", "":
		p := newPrinter(w)
		table(p)
		return p.flush()
	default:
		return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(formats, ", "))
	}
}

func checkFormat(format string) error {
	if !slices.Contains(formats, format) {
		return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(formats, ", "))
	}
	return nil
}

// printer writes kubectl-like tables: upper-case headers, aligned columns, sections with a
// title; bold titles only on a terminal.
type printer struct {
	w      io.Writer
	tw     *tabwriter.Writer
	colour bool
	first  bool
}

func newPrinter(w io.Writer) *printer {
	colour := false
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "" {
		colour = true
	}
	return &printer{w: w, colour: colour, first: true}
}

// section starts a titled table with the given columns.
func (p *printer) section(title string, columns ...string) {
	p.flush()
	if !p.first {
		fmt.Fprintln(p.w)
	}
	p.first = false
	if p.colour {
		title = "\x1b[1m" + title + "\x1b[0m"
	}
	fmt.Fprintln(p.w, title)
	p.tw = tabwriter.NewWriter(p.w, 0, 8, 3, ' ', 0)
	if len(columns) > 0 {
		fmt.Fprintln(p.tw, strings.Join(columns, "\t"))
	}
}

// row adds a row to the current section.
func (p *printer) row(cells ...string) {
	fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
}

// line prints text under the current section.
func (p *printer) line(format string, args ...any) {
	p.flush()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) flush() error {
	if p.tw == nil {
		return nil
	}
	err := p.tw.Flush()
	p.tw = nil
	return err
}

func money(v float64) string { return fmt.Sprintf("$%.4f", v) }

func list(values []string, max int) string {
	if len(values) == 0 {
		return "any"
	}
	if max > 0 && len(values) > max {
		return strings.Join(values[:max], ",") + fmt.Sprintf(",+%d", len(values)-max)
	}
	return strings.Join(values, ",")
}
