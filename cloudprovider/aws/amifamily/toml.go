package amifamily

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Bottlerocket user data is TOML. go-toml reads it into a plain tree (map[string]any whose
// values are string, int64, float64, bool, []any, map[string]any or go-toml's date-time types)
// and writes every key and value; the layout of the merged document — which keys come first,
// tables after values, one [header] per table, blank lines — is joinery's, decided here.

// decodeTOML parses a TOML document into a tree.
func decodeTOML(data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// tomlKeyOrder names, for the table at path, the keys to write first and in which order; the
// remaining keys follow sorted. A nil tomlKeyOrder sorts every table.
type tomlKeyOrder func(path []string) []string

// encodeTOML writes doc as TOML: each table's values first, then its sub-tables, every table
// with its own [header], and a blank line before a header unless it directly follows its
// parent's. Tables inside arrays are written inline.
func encodeTOML(doc map[string]any, order tomlKeyOrder) ([]byte, error) {
	w := &tomlWriter{order: order}
	if err := w.table(nil, doc); err != nil {
		return nil, err
	}
	return w.out.Bytes(), nil
}

type tomlWriter struct {
	out   bytes.Buffer
	order tomlKeyOrder
	// lastHeader is the path of the header just written, nil once a value follows it.
	lastHeader []string
}

// keys are table's keys in the order order gives for path.
func (w *tomlWriter) keys(path []string, table map[string]any) []string {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if w.order == nil {
		return keys
	}
	first := w.order(path)
	rank := func(k string) int {
		if i := slices.Index(first, k); i >= 0 {
			return i
		}
		return len(first)
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	return keys
}

func (w *tomlWriter) table(path []string, table map[string]any) error {
	if len(path) > 0 {
		parentJustOpened := w.lastHeader != nil && slices.Equal(w.lastHeader, path[:len(path)-1])
		if w.out.Len() > 0 && !parentJustOpened {
			w.out.WriteByte('\n')
		}
		quoted := make([]string, len(path))
		for i, k := range path {
			q, err := tomlKey(k)
			if err != nil {
				return fmt.Errorf("toml: table %s: %w", strings.Join(path, "."), err)
			}
			quoted[i] = q
		}
		fmt.Fprintf(&w.out, "[%s]\n", strings.Join(quoted, "."))
		w.lastHeader = slices.Clone(path)
	}
	keys := w.keys(path, table)
	for _, k := range keys {
		if _, isTable := table[k].(map[string]any); isTable {
			continue
		}
		line, err := tomlKeyValue(k, table[k])
		if err != nil {
			return fmt.Errorf("toml: %s: %w", strings.Join(append(slices.Clone(path), k), "."), err)
		}
		w.out.Write(line)
		w.lastHeader = nil
	}
	for _, k := range keys {
		if sub, isTable := table[k].(map[string]any); isTable {
			if err := w.table(append(slices.Clone(path), k), sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// tomlKeyValue is go-toml's "key = value\n" line for one value that is not a table.
func tomlKeyValue(key string, value any) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.SetTablesInline(true) // tables inside arrays stay on the value's line
	if err := enc.Encode(map[string]any{key: value}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// tomlKey is key as go-toml writes it: bare when TOML allows, quoted otherwise.
func tomlKey(key string) (string, error) {
	line, err := tomlKeyValue(key, true)
	if err != nil {
		return "", err
	}
	quoted, ok := strings.CutSuffix(string(line), " = true\n")
	if !ok {
		return "", fmt.Errorf("unexpected encoding of key %q: %q", key, line)
	}
	return quoted, nil
}
