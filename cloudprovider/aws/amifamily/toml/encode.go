package toml

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// KeyOrder names, for the table at path, the keys to write first and in which order; the
// remaining keys follow sorted. A nil KeyOrder sorts every table.
type KeyOrder func(path []string) []string

// Encode writes doc as TOML: each table's values first, then its sub-tables, every table with
// its own [header], and a blank line before a header unless it directly follows its parent's.
func Encode(doc map[string]any, order KeyOrder) ([]byte, error) {
	e := &encoder{order: order}
	if err := e.table(nil, doc); err != nil {
		return nil, err
	}
	return []byte(e.out.String()), nil
}

type encoder struct {
	out   strings.Builder
	order KeyOrder
	// lastHeader is the path of the header just written, nil once a value follows it.
	lastHeader []string
}

func (e *encoder) sortedKeys(path []string, table map[string]any) []string {
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if e.order == nil {
		return keys
	}
	first := e.order(path)
	rank := func(k string) int {
		if i := slices.Index(first, k); i >= 0 {
			return i
		}
		return len(first)
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	return keys
}

func (e *encoder) table(path []string, table map[string]any) error {
	if len(path) > 0 {
		parentJustOpened := e.lastHeader != nil && slices.Equal(e.lastHeader, path[:len(path)-1])
		if e.out.Len() > 0 && !parentJustOpened {
			e.out.WriteString("\n")
		}
		quoted := make([]string, len(path))
		for i, k := range path {
			quoted[i] = QuoteKey(k)
		}
		fmt.Fprintf(&e.out, "[%s]\n", strings.Join(quoted, "."))
		e.lastHeader = slices.Clone(path)
	}
	keys := e.sortedKeys(path, table)
	for _, k := range keys {
		if _, isTable := table[k].(map[string]any); isTable {
			continue
		}
		v, err := value(table[k])
		if err != nil {
			return fmt.Errorf("toml: %s: %w", strings.Join(append(slices.Clone(path), k), "."), err)
		}
		fmt.Fprintf(&e.out, "%s = %s\n", QuoteKey(k), v)
		e.lastHeader = nil
	}
	for _, k := range keys {
		if sub, isTable := table[k].(map[string]any); isTable {
			if err := e.table(append(slices.Clone(path), k), sub); err != nil {
				return err
			}
		}
	}
	return nil
}

func value(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return QuoteString(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return float(v), nil
	case []string:
		items := make([]string, len(v))
		for i, s := range v {
			items[i] = QuoteString(s)
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case []any:
		items := make([]string, len(v))
		for i, item := range v {
			s, err := value(item)
			if err != nil {
				return "", err
			}
			items[i] = s
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case map[string]any:
		// Only reached inside arrays: tables elsewhere get headers.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		items := make([]string, len(keys))
		for i, k := range keys {
			s, err := value(v[k])
			if err != nil {
				return "", err
			}
			items[i] = QuoteKey(k) + " = " + s
		}
		return "{" + strings.Join(items, ", ") + "}", nil
	}
	return "", fmt.Errorf("unsupported value type %T", v)
}

func float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// QuoteKey writes k bare when TOML allows it, quoted otherwise.
func QuoteKey(k string) string {
	if k == "" {
		return "''"
	}
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return QuoteString(k)
		}
	}
	return k
}

// QuoteString writes s as a literal string ('...') when it can be one, as a basic string with
// escapes otherwise.
func QuoteString(s string) string {
	literal := true
	for _, r := range s {
		if r == '\'' || r < 0x20 && r != '\t' || r == 0x7f {
			literal = false
			break
		}
	}
	if literal {
		return "'" + s + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
