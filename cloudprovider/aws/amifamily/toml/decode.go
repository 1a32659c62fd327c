package toml

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decode parses a TOML document into a tree of map[string]any.
func Decode(data []byte) (map[string]any, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("toml: document is not valid UTF-8")
	}
	d := &decoder{src: string(data), root: map[string]any{}, defined: map[string]bool{}}
	d.current = d.root
	if err := d.document(); err != nil {
		return nil, err
	}
	return d.root, nil
}

type decoder struct {
	src     string
	pos     int
	root    map[string]any
	current map[string]any
	// defined records tables opened by a [header], which TOML forbids opening twice.
	defined map[string]bool
}

func (d *decoder) errorf(format string, args ...any) error {
	line := 1 + strings.Count(d.src[:min(d.pos, len(d.src))], "\n")
	return fmt.Errorf("toml: line %d: %s", line, fmt.Sprintf(format, args...))
}

func (d *decoder) eof() bool { return d.pos >= len(d.src) }

func (d *decoder) peek() byte {
	if d.eof() {
		return 0
	}
	return d.src[d.pos]
}

func (d *decoder) hasPrefix(s string) bool { return strings.HasPrefix(d.src[d.pos:], s) }

// skipSpaces skips tabs and spaces, never newlines.
func (d *decoder) skipSpaces() {
	for !d.eof() && (d.peek() == ' ' || d.peek() == '\t') {
		d.pos++
	}
}

// skipComment skips a comment up to, not including, the end of its line.
func (d *decoder) skipComment() {
	if d.peek() != '#' {
		return
	}
	for !d.eof() && d.peek() != '\n' {
		d.pos++
	}
}

// skipBlank skips whitespace, newlines and comments.
func (d *decoder) skipBlank() {
	for !d.eof() {
		switch d.peek() {
		case ' ', '\t', '\n', '\r':
			d.pos++
		case '#':
			d.skipComment()
		default:
			return
		}
	}
}

// endOfLine consumes optional spaces and a comment, then requires a newline or the end.
func (d *decoder) endOfLine() error {
	d.skipSpaces()
	d.skipComment()
	switch {
	case d.eof():
		return nil
	case d.hasPrefix("\n"):
		d.pos++
		return nil
	case d.hasPrefix("\r\n"):
		d.pos += 2
		return nil
	}
	return d.errorf("unexpected %q after value", d.peek())
}

func (d *decoder) document() error {
	for {
		d.skipBlank()
		if d.eof() {
			return nil
		}
		if d.peek() == '[' {
			if err := d.header(); err != nil {
				return err
			}
			continue
		}
		if err := d.keyValue(d.current); err != nil {
			return err
		}
		if err := d.endOfLine(); err != nil {
			return err
		}
	}
}

func (d *decoder) header() error {
	if d.hasPrefix("[[") {
		return d.errorf("arrays of tables are not supported")
	}
	d.pos++
	d.skipSpaces()
	path, err := d.key()
	if err != nil {
		return err
	}
	d.skipSpaces()
	if d.peek() != ']' {
		return d.errorf("expected ] to close table header")
	}
	d.pos++
	id := strings.Join(path, "\x00")
	if d.defined[id] {
		return d.errorf("table [%s] defined twice", strings.Join(path, "."))
	}
	d.defined[id] = true
	table, err := d.descend(d.root, path)
	if err != nil {
		return err
	}
	d.current = table
	return d.endOfLine()
}

// descend walks path from table, creating missing tables.
func (d *decoder) descend(table map[string]any, path []string) (map[string]any, error) {
	for _, k := range path {
		next, ok := table[k]
		if !ok {
			child := map[string]any{}
			table[k] = child
			table = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return nil, d.errorf("key %q is already a value, not a table", k)
		}
		table = child
	}
	return table, nil
}

func (d *decoder) keyValue(table map[string]any) error {
	path, err := d.key()
	if err != nil {
		return err
	}
	d.skipSpaces()
	if d.peek() != '=' {
		return d.errorf("expected = after key %q", strings.Join(path, "."))
	}
	d.pos++
	d.skipSpaces()
	value, err := d.value()
	if err != nil {
		return err
	}
	parent, err := d.descend(table, path[:len(path)-1])
	if err != nil {
		return err
	}
	last := path[len(path)-1]
	if _, dup := parent[last]; dup {
		return d.errorf("key %q defined twice", strings.Join(path, "."))
	}
	parent[last] = value
	return nil
}

// key reads a possibly dotted key.
func (d *decoder) key() ([]string, error) {
	var path []string
	for {
		d.skipSpaces()
		part, err := d.simpleKey()
		if err != nil {
			return nil, err
		}
		path = append(path, part)
		d.skipSpaces()
		if d.peek() != '.' {
			return path, nil
		}
		d.pos++
	}
}

func isBare(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (d *decoder) simpleKey() (string, error) {
	switch d.peek() {
	case '"':
		if d.hasPrefix(`"""`) {
			return "", d.errorf("multi-line strings cannot be keys")
		}
		return d.basicString()
	case '\'':
		if d.hasPrefix(`'''`) {
			return "", d.errorf("multi-line strings cannot be keys")
		}
		return d.literalString()
	}
	start := d.pos
	for !d.eof() && isBare(d.peek()) {
		d.pos++
	}
	if start == d.pos {
		return "", d.errorf("expected a key, found %q", d.peek())
	}
	return d.src[start:d.pos], nil
}

func (d *decoder) value() (any, error) {
	switch c := d.peek(); {
	case d.eof():
		return nil, d.errorf("missing value")
	case d.hasPrefix(`"""`):
		return d.multilineBasicString()
	case c == '"':
		return d.basicString()
	case d.hasPrefix(`'''`):
		return d.multilineLiteralString()
	case c == '\'':
		return d.literalString()
	case c == '[':
		return d.array()
	case c == '{':
		return d.inlineTable()
	}
	return d.scalar()
}

func (d *decoder) array() ([]any, error) {
	d.pos++ // [
	out := []any{}
	for {
		d.skipBlank()
		if d.peek() == ']' {
			d.pos++
			return out, nil
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		d.skipBlank()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return out, nil
		default:
			return nil, d.errorf("expected , or ] in array")
		}
	}
}

func (d *decoder) inlineTable() (map[string]any, error) {
	d.pos++ // {
	out := map[string]any{}
	d.skipSpaces()
	if d.peek() == '}' {
		d.pos++
		return out, nil
	}
	for {
		if err := d.keyValue(out); err != nil {
			return nil, err
		}
		d.skipSpaces()
		switch d.peek() {
		case ',':
			d.pos++
			d.skipSpaces()
		case '}':
			d.pos++
			return out, nil
		default:
			return nil, d.errorf("expected , or } in inline table")
		}
	}
}

func (d *decoder) literalString() (string, error) {
	d.pos++ // '
	start := d.pos
	for !d.eof() {
		switch c := d.peek(); {
		case c == '\'':
			s := d.src[start:d.pos]
			d.pos++
			return s, nil
		case c == '\n' || c == '\r':
			return "", d.errorf("newline in literal string")
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", d.errorf("control character in string")
		}
		d.pos++
	}
	return "", d.errorf("unterminated literal string")
}

func (d *decoder) multilineLiteralString() (string, error) {
	d.pos += 3
	d.trimLeadingNewline()
	start := d.pos
	for !d.eof() {
		if d.hasPrefix("'''") {
			end := d.pos + d.extraQuotes('\'')
			s := d.src[start:end]
			d.pos = end + 3
			return s, nil
		}
		d.pos++
	}
	return "", d.errorf("unterminated multi-line literal string")
}

func (d *decoder) trimLeadingNewline() {
	if d.hasPrefix("\n") {
		d.pos++
	} else if d.hasPrefix("\r\n") {
		d.pos += 2
	}
}

// extraQuotes counts quotes beyond a closing triple (up to two), which belong to the content.
func (d *decoder) extraQuotes(q byte) int {
	n := 0
	for n < 2 && d.pos+3+n < len(d.src) && d.src[d.pos+3+n] == q {
		n++
	}
	return n
}

func (d *decoder) basicString() (string, error) {
	d.pos++ // "
	var b strings.Builder
	for !d.eof() {
		switch c := d.peek(); {
		case c == '"':
			d.pos++
			return b.String(), nil
		case c == '\\':
			if err := d.escape(&b); err != nil {
				return "", err
			}
		case c == '\n' || c == '\r':
			return "", d.errorf("newline in basic string")
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", d.errorf("control character in string")
		default:
			b.WriteByte(c)
			d.pos++
		}
	}
	return "", d.errorf("unterminated basic string")
}

func (d *decoder) multilineBasicString() (string, error) {
	d.pos += 3
	d.trimLeadingNewline()
	var b strings.Builder
	for !d.eof() {
		if d.hasPrefix(`"""`) {
			extra := d.extraQuotes('"')
			b.WriteString(strings.Repeat(`"`, extra))
			d.pos += 3 + extra
			return b.String(), nil
		}
		c := d.peek()
		if c != '\\' {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return "", d.errorf("control character in string")
			}
			b.WriteByte(c)
			d.pos++
			continue
		}
		// A backslash ending a line trims the newline and the whitespace after it.
		rest := d.src[d.pos+1:]
		trimmed := strings.TrimLeft(rest, " \t")
		if strings.HasPrefix(trimmed, "\n") || strings.HasPrefix(trimmed, "\r\n") {
			d.pos = len(d.src) - len(strings.TrimLeft(trimmed, " \t\r\n"))
			continue
		}
		if err := d.escape(&b); err != nil {
			return "", err
		}
	}
	return "", d.errorf("unterminated multi-line basic string")
}

func (d *decoder) escape(b *strings.Builder) error {
	d.pos++ // backslash
	if d.eof() {
		return d.errorf("unterminated escape")
	}
	c := d.peek()
	d.pos++
	simple := map[byte]byte{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', '"': '"', '\\': '\\'}
	if r, ok := simple[c]; ok {
		b.WriteByte(r)
		return nil
	}
	width := map[byte]int{'u': 4, 'U': 8}[c]
	if width == 0 {
		return d.errorf("invalid escape \\%c", c)
	}
	if d.pos+width > len(d.src) {
		return d.errorf("short unicode escape")
	}
	code, err := strconv.ParseUint(d.src[d.pos:d.pos+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(code)) {
		return d.errorf("invalid unicode escape %q", d.src[d.pos:d.pos+width])
	}
	d.pos += width
	b.WriteRune(rune(code))
	return nil
}

// scalar reads a boolean or a number.
func (d *decoder) scalar() (any, error) {
	start := d.pos
	for !d.eof() && (isBare(d.peek()) || strings.IndexByte("+.:", d.peek()) >= 0) {
		d.pos++
	}
	tok := d.src[start:d.pos]
	switch tok {
	case "":
		return nil, d.errorf("unexpected %q where a value was expected", d.peek())
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	}
	if strings.Contains(tok, ":") || len(tok) >= 5 && tok[4] == '-' && isDigits(tok[:4]) {
		return nil, d.errorf("date-time values are not supported (%q)", tok)
	}
	if err := checkUnderscores(tok); err != nil {
		return nil, d.errorf("%v", err)
	}
	clean := strings.ReplaceAll(tok, "_", "")
	for prefix, base := range map[string]int{"0x": 16, "0o": 8, "0b": 2} {
		if digits, ok := strings.CutPrefix(clean, prefix); ok {
			n, err := strconv.ParseInt(digits, base, 64)
			if err != nil {
				return nil, d.errorf("invalid integer %q", tok)
			}
			return n, nil
		}
	}
	if strings.ContainsAny(clean, ".eE") {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil {
			return nil, d.errorf("invalid float %q", tok)
		}
		return f, nil
	}
	digits := strings.TrimLeft(clean, "+-")
	if len(digits) > 1 && digits[0] == '0' {
		return nil, d.errorf("leading zeros in integer %q", tok)
	}
	n, err := strconv.ParseInt(clean, 10, 64)
	if err != nil {
		return nil, d.errorf("invalid value %q", tok)
	}
	return n, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkUnderscores enforces that underscores in numbers sit between two digits.
func checkUnderscores(tok string) error {
	for i := 0; i < len(tok); i++ {
		if tok[i] != '_' {
			continue
		}
		if i == 0 || i == len(tok)-1 || !isHexDigit(tok[i-1]) || !isHexDigit(tok[i+1]) {
			return fmt.Errorf("misplaced underscore in %q", tok)
		}
	}
	return nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
