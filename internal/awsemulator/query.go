package awsemulator

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Query is a decoded query-protocol request: flat keys such as "Filter.1.Value.2".
type Query struct{ values url.Values }

func parseQuery(body string) (Query, error) {
	values, err := url.ParseQuery(body)
	if err != nil {
		return Query{}, fmt.Errorf("parsing the form body: %w", err)
	}
	return Query{values: values}, nil
}

// Get returns the value of key, or "".
func (q Query) Get(key string) string { return q.values.Get(key) }

// Has reports whether key was sent.
func (q Query) Has(key string) bool { return q.values.Has(key) }

// Int returns key as an integer, def when absent, and an InvalidParameterValue error when
// malformed.
func (q Query) Int(key string, def int) (int, error) {
	raw := q.values.Get(key)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, errInvalidParameter("value (%s) for parameter %s is invalid: not an integer", raw, key)
	}
	return n, nil
}

// Bool returns key as a boolean (false when absent).
func (q Query) Bool(key string) bool { return q.values.Get(key) == "true" }

// List returns the values of a flattened list: prefix.1, prefix.2, ... in index order.
func (q Query) List(prefix string) []string {
	var out []string
	for _, m := range q.Members(prefix) {
		if v := m.values.Get(""); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Members returns the entries of a list of structures, prefix.N.*, each as a Query whose keys
// are relative to the entry ("" holds a scalar entry's own value), in index order.
func (q Query) Members(prefix string) []Query {
	byIndex := map[int]url.Values{}
	for key, vals := range q.values {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			continue
		}
		indexStr, field, _ := strings.Cut(rest, ".")
		index, err := strconv.Atoi(indexStr)
		if err != nil {
			continue
		}
		if byIndex[index] == nil {
			byIndex[index] = url.Values{}
		}
		byIndex[index][field] = vals
	}
	indexes := make([]int, 0, len(byIndex))
	for i := range byIndex {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	out := make([]Query, 0, len(indexes))
	for _, i := range indexes {
		out = append(out, Query{values: byIndex[i]})
	}
	return out
}

// Member returns the structure under prefix (prefix.*) as a Query with relative keys.
func (q Query) Member(prefix string) Query {
	out := url.Values{}
	for key, vals := range q.values {
		if rest, ok := strings.CutPrefix(key, prefix+"."); ok {
			out[rest] = vals
		}
	}
	return Query{values: out}
}

// Empty reports whether the query has no keys.
func (q Query) Empty() bool { return len(q.values) == 0 }

// Filter is one EC2 Filter.N: a name and the values any of which may match.
type Filter struct {
	Name   string
	Values []string
}

// Filters returns the request's Filter.N entries.
func (q Query) Filters() []Filter {
	var out []Filter
	for _, m := range q.Members("Filter") {
		out = append(out, Filter{Name: m.Get("Name"), Values: m.List("Value")})
	}
	return out
}

// Tags returns the Key/Value pairs of a list of tags under prefix (e.g. "Tag" or
// "TagSpecification.1.Tag").
func (q Query) Tags(prefix string) map[string]string {
	out := map[string]string{}
	for _, m := range q.Members(prefix) {
		out[m.Get("Key")] = m.Get("Value")
	}
	return out
}
