package awsemulator

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

type parameterJSON struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int64   `json:"Version"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
	ARN              string  `json:"ARN"`
	DataType         string  `json:"DataType"`
}

// parameterName accepts a parameter's name or ARN
// (arn:aws:ssm:<region>:<account>:parameter/<name without its leading slash>).
func parameterName(nameOrARN string) string {
	if !strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	_, rest, ok := strings.Cut(nameOrARN, ":parameter/")
	if !ok {
		return nameOrARN
	}
	if strings.Contains(rest, "/") {
		return "/" + rest // hierarchical names keep their leading slash
	}
	return rest
}

func (s *Server) parameterJSON(p *Parameter) parameterJSON {
	account := AccountID
	if strings.HasPrefix(p.Name, "/aws/service/") {
		account = "" // AWS's public parameters have no account in their ARN
	}
	dataType := p.DataType
	if dataType == "" {
		dataType = "text"
	}
	return parameterJSON{
		Name: p.Name, Type: p.Type, Value: p.Value, Version: p.Version,
		LastModifiedDate: float64(p.LastModified.UnixMilli()) / 1000,
		ARN:              fmt.Sprintf("arn:aws:ssm:%s:%s:parameter/%s", s.Region, account, strings.TrimPrefix(p.Name, "/")),
		DataType:         dataType,
	}
}

func (s *Server) getParameter(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		Name string `json:"Name"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &APIError{Code: "ValidationException", Message: err.Error()}
	}
	if in.Name == "" {
		return nil, &APIError{Code: "ValidationException", Message: "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null"}
	}
	p, ok := s.resources.parameters[parameterName(in.Name)]
	if !ok {
		return nil, &APIError{Code: "ParameterNotFound", Message: fmt.Sprintf("Parameter %s not found.", in.Name)}
	}
	return struct {
		Parameter parameterJSON `json:"Parameter"`
	}{s.parameterJSON(p)}, nil
}

// getParameters answers up to 10 names; the unknown ones are listed in InvalidParameters
// rather than failing the call.
func (s *Server) getParameters(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		Names []string `json:"Names"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &APIError{Code: "ValidationException", Message: err.Error()}
	}
	if len(in.Names) == 0 || len(in.Names) > 10 {
		return nil, &APIError{Code: "ValidationException", Message: fmt.Sprintf("1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1 (got %d)", len(in.Names))}
	}
	out := struct {
		Parameters        []parameterJSON `json:"Parameters"`
		InvalidParameters []string        `json:"InvalidParameters"`
	}{Parameters: []parameterJSON{}, InvalidParameters: []string{}}
	for _, name := range dedupe(in.Names) {
		if p, ok := s.resources.parameters[parameterName(name)]; ok {
			out.Parameters = append(out.Parameters, s.parameterJSON(p))
		} else {
			out.InvalidParameters = append(out.InvalidParameters, name)
		}
	}
	return out, nil
}

// getParametersByPath lists the parameters under a path: its direct children, or with
// Recursive every descendant, by name, 10 per page by default (SSM's maximum).
func (s *Server) getParametersByPath(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		Path       string `json:"Path"`
		Recursive  bool   `json:"Recursive"`
		MaxResults int    `json:"MaxResults"`
		NextToken  string `json:"NextToken"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &APIError{Code: "ValidationException", Message: err.Error()}
	}
	if !strings.HasPrefix(in.Path, "/") {
		return nil, &APIError{Code: "ValidationException", Message: fmt.Sprintf("The parameter path %q must begin with a slash (/).", in.Path)}
	}
	if in.MaxResults == 0 {
		in.MaxResults = 10
	}
	if in.MaxResults < 1 || in.MaxResults > 10 {
		return nil, &APIError{Code: "ValidationException", Message: "1 validation error detected: Value at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to 10"}
	}
	prefix := strings.TrimSuffix(in.Path, "/") + "/"
	var names []string
	for name := range s.resources.parameters {
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && rest != "" && (in.Recursive || !strings.Contains(rest, "/")) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	start := 0
	if in.NextToken != "" {
		start = sort.SearchStrings(names, in.NextToken)
		if start == len(names) || names[start] != in.NextToken {
			return nil, &APIError{Code: "InvalidNextToken", Message: "The specified token isn't valid."}
		}
	}
	end := min(start+in.MaxResults, len(names))
	out := struct {
		Parameters []parameterJSON `json:"Parameters"`
		NextToken  string          `json:"NextToken,omitempty"`
	}{Parameters: []parameterJSON{}}
	for _, name := range names[start:end] {
		out.Parameters = append(out.Parameters, s.parameterJSON(s.resources.parameters[name]))
	}
	if end < len(names) {
		out.NextToken = names[end]
	}
	return out, nil
}
