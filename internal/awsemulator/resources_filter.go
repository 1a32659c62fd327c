package awsemulator

import (
	"encoding/base64"
	"sort"
	"strconv"
	"strings"
)

// wildcardMatch reports whether s matches an EC2 filter pattern, where * matches any run of
// characters and ? exactly one.
func wildcardMatch(pattern, s string) bool {
	// Iterative matching with backtracking to the last *.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// attributes answers the value(s) a resource has for a filter name; ok is false for a filter
// the resource kind does not support.
type attributes func(name string) (values []string, ok bool)

// matchFilters reports whether a resource passes every filter (ANDed; a filter's values are
// ORed). Tag filters are answered from tags; visibleTags is false for resources whose tags the
// caller cannot see (another account's images), which then match no tag filter. An unknown
// filter name is an InvalidParameterValue error, as in EC2.
func matchFilters(filters []Filter, tags map[string]string, visibleTags bool, attrs attributes) (bool, error) {
	for _, f := range filters {
		var values []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]; ok && visibleTags {
				values = []string{v}
			}
		case f.Name == "tag-key":
			if visibleTags {
				for k := range tags {
					values = append(values, k)
				}
			}
		case f.Name == "tag-value":
			if visibleTags {
				for _, v := range tags {
					values = append(values, v)
				}
			}
		default:
			v, ok := attrs(f.Name)
			if !ok {
				return false, errInvalidParameter("The filter '%s' is invalid", f.Name)
			}
			values = v
		}
		if !anyMatches(f.Values, values) {
			return false, nil
		}
	}
	return true, nil
}

func anyMatches(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// page returns one page of ids (sorted, for stable pagination) from the request's NextToken,
// and the token of the next page ("" on the last). maxResults 0 returns everything.
func page(ids []string, q Query, minResults, maxAllowed int) ([]string, string, error) {
	sort.Strings(ids)
	maxResults, err := q.Int("MaxResults", 0)
	if err != nil {
		return nil, "", err
	}
	if q.Has("MaxResults") && (maxResults < minResults || maxResults > maxAllowed) {
		return nil, "", errInvalidParameter("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", maxResults, minResults, maxAllowed)
	}
	start := 0
	if token := q.Get("NextToken"); token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err == nil {
			start, err = strconv.Atoi(strings.TrimPrefix(string(raw), "offset:"))
		}
		if err != nil || start < 0 || start > len(ids) {
			return nil, "", errInvalidParameter("The token '%s' is invalid", token)
		}
	}
	if maxResults == 0 || start+maxResults >= len(ids) {
		return ids[start:], "", nil
	}
	end := start + maxResults
	return ids[start:end], base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(end))), nil
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

// tagSet returns tags sorted by key, as EC2's tagSet lists.
func tagSet(tags map[string]string) []tagXML {
	out := make([]tagXML, 0, len(tags))
	for k, v := range tags {
		out = append(out, tagXML{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// filterIDs keeps, in order, the ids keep accepts; the first error keep returns ends it.
func filterIDs(ids []string, keep func(id string) (bool, error)) ([]string, error) {
	var out []string
	for _, id := range ids {
		ok, err := keep(id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, id)
		}
	}
	return out, nil
}
