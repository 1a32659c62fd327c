package amifamily

import (
	"fmt"
	"strings"
)

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWords splits one command line into words the way a POSIX shell does for a simple
// command: quotes and backslashes are removed and a backslash-newline joins lines. Expansions
// are not performed; user data joinery reads back contains none.
func shellWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			end()
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("trailing backslash in %q", s)
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			close := strings.IndexByte(s[i+1:], '\'')
			if close < 0 {
				return nil, fmt.Errorf("unterminated single quote in %q", s)
			}
			word.WriteString(s[i+1 : i+1+close])
			inWord = true
			i += close + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				word.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote in %q", s)
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}

// logicalLines joins lines continued with a trailing backslash.
func logicalLines(script string) []string {
	var (
		out     []string
		pending strings.Builder
	)
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSuffix(line, "\r")
		trailing := len(line) - len(strings.TrimRight(line, `\`))
		if trailing%2 == 1 {
			pending.WriteString(line + "\n")
			continue
		}
		pending.WriteString(line)
		out = append(out, pending.String())
		pending.Reset()
	}
	if pending.Len() > 0 {
		// The script ended on a continuation; drop the line break added for the missing line.
		out = append(out, strings.TrimSuffix(pending.String(), "\n"))
	}
	return out
}

// psQuote quotes s as a PowerShell single-quoted string.
func psQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// psWords splits a PowerShell command line into words: single-quoted strings (a doubled ' is a quote),
// double-quoted strings (`x and "" escape), and bare words. Variables are not expanded.
func psWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			end()
		case c == '\'' || c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == c {
					if i+1 < len(s) && s[i+1] == c {
						word.WriteByte(c)
						i++
						continue
					}
					closed = true
					break
				}
				if c == '"' && s[i] == '`' && i+1 < len(s) {
					i++
				}
				word.WriteByte(s[i])
			}
			if !closed {
				return nil, fmt.Errorf("unterminated %c quote in %q", c, s)
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}
