package amifamily

import (
	"fmt"
	"mime"
	"regexp"
	"strings"
)

const (
	shellContentType      = `Content-Type: text/x-shellscript; charset="us-ascii"`
	nodeConfigContentType = "Content-Type: application/node.eks.aws"
	mimeBoundary          = "//"
)

// mimePart is one part of a multi-part archive, kept byte for byte so that the user's parts
// reach the instance exactly as written.
type mimePart struct {
	// header holds the raw header lines, in order.
	header []string
	body   string
}

// contentType is the part's media type, lower-cased and without parameters.
func (p mimePart) contentType() string {
	for _, line := range p.header {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Content-Type") {
			continue
		}
		media, _, err := mime.ParseMediaType(strings.TrimSpace(value))
		if err != nil {
			return strings.ToLower(strings.TrimSpace(value))
		}
		return media
	}
	return ""
}

var headerLine = regexp.MustCompile(`^[A-Za-z0-9-]+:`)

// parseMIME splits a multi-part archive into its parts. ok is false when s is not a multi-part
// archive at all (it has no leading headers naming a multipart Content-Type and boundary).
func parseMIME(s string) (parts []mimePart, ok bool, err error) {
	header, rest, found := splitHeader(s)
	if !found {
		return nil, false, nil
	}
	boundary := ""
	for _, line := range header {
		name, value, _ := strings.Cut(line, ":")
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Type") {
			continue
		}
		media, params, err := mime.ParseMediaType(strings.TrimSpace(value))
		if err != nil {
			return nil, false, fmt.Errorf("parsing MIME Content-Type %q: %w", value, err)
		}
		if !strings.HasPrefix(media, "multipart/") {
			return nil, false, nil
		}
		boundary = params["boundary"]
		if boundary == "" {
			return nil, false, fmt.Errorf("MIME Content-Type %q has no boundary", value)
		}
	}
	if boundary == "" {
		return nil, false, nil
	}
	var (
		current []string // lines of the part being read, nil before the first delimiter
		inPart  bool
	)
	flush := func() error {
		if !inPart {
			return nil
		}
		part, err := parsePart(current)
		if err != nil {
			return err
		}
		if part != nil {
			parts = append(parts, *part)
		}
		return nil
	}
	for _, line := range splitLinesKeepEnds(rest) {
		trimmed := strings.TrimRight(line, " \t\r\n")
		switch trimmed {
		case "--" + boundary:
			if err := flush(); err != nil {
				return nil, true, err
			}
			current, inPart = nil, true
			continue
		case "--" + boundary + "--":
			if err := flush(); err != nil {
				return nil, true, err
			}
			return parts, true, nil
		}
		if inPart {
			current = append(current, line)
		}
	}
	// An archive that ends without its closing delimiter still delivers the parts read so far.
	if err := flush(); err != nil {
		return nil, true, err
	}
	return parts, true, nil
}

// parsePart reads one part from its lines. The line break before a delimiter belongs to the
// delimiter, so it is not part of the body. A part with nothing in it yields nil.
func parsePart(lines []string) (*mimePart, error) {
	text := strings.Join(lines, "")
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	text = strings.TrimSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\r")
	header, body, found := splitHeader(text)
	if !found {
		if !strings.HasPrefix(text, "\n") && !strings.HasPrefix(text, "\r\n") {
			return nil, fmt.Errorf("MIME part has no blank line between headers and body: %q", firstLine(text))
		}
		body = strings.TrimPrefix(strings.TrimPrefix(text, "\r"), "\n")
	}
	return &mimePart{header: header, body: body}, nil
}

// splitHeader splits "Header: value" lines, up to the first blank line, from what follows it.
// found is false unless s starts with at least one header line and has the blank line.
func splitHeader(s string) (header []string, rest string, found bool) {
	pos := 0
	for pos < len(s) {
		end := strings.IndexByte(s[pos:], '\n')
		if end < 0 {
			return nil, "", false
		}
		line := strings.TrimRight(s[pos:pos+end], "\r")
		pos += end + 1
		if line == "" {
			return header, s[pos:], len(header) > 0
		}
		switch {
		case headerLine.MatchString(line):
			header = append(header, line)
		case (line[0] == ' ' || line[0] == '\t') && len(header) > 0:
			header[len(header)-1] += "\n" + line
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}

func splitLinesKeepEnds(s string) []string {
	var lines []string
	for s != "" {
		end := strings.IndexByte(s, '\n')
		if end < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:end+1])
		s = s[end+1:]
	}
	return lines
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// writeMIME writes parts as a multipart/mixed archive. The boundary is "//" unless a part's
// body contains a line that would read as that delimiter.
func writeMIME(parts []mimePart) []byte {
	boundary := mimeBoundary
	for i := 0; collides(parts, boundary); i++ {
		boundary = fmt.Sprintf("%s%d", mimeBoundary, i)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		b.WriteString("--" + boundary + "\n")
		for _, h := range p.header {
			b.WriteString(h + "\n")
		}
		b.WriteString("\n" + p.body + "\n")
	}
	b.WriteString("--" + boundary + "--\n")
	return []byte(b.String())
}

func collides(parts []mimePart, boundary string) bool {
	for _, p := range parts {
		for _, line := range strings.Split(p.body, "\n") {
			if strings.HasPrefix(line, "--"+boundary) {
				return true
			}
		}
	}
	return false
}

// userParts turns spec.userData into MIME parts: an archive's own parts, otherwise the whole
// content as the single part classify makes of it.
func userParts(userData string, classify func(string) mimePart) ([]mimePart, error) {
	if userData == "" {
		return nil, nil
	}
	parts, isMIME, err := parseMIME(userData)
	if err != nil {
		return nil, fmt.Errorf("parsing MIME user data: %w", err)
	}
	if isMIME {
		return parts, nil
	}
	return []mimePart{classify(userData)}, nil
}

func shellPart(content string) mimePart {
	return mimePart{header: []string{shellContentType}, body: content}
}
