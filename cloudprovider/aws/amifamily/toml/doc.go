// Package toml reads and writes the subset of TOML v1.0 that Bottlerocket user data uses:
// tables, dotted and quoted keys, basic and literal strings (single- and multi-line), integers,
// floats, booleans, arrays and inline tables. Arrays of tables and date-times are refused with an
// error rather than misread. Documents are plain trees: map[string]any whose values are string,
// int64, float64, bool, []any or map[string]any.
//
// The module graph offers no TOML library that go.sum pins, so joinery carries this small codec
// instead of adding a dependency.
package toml
