package sqlgateway

import (
	"regexp"
	"strings"
)

// Split cuts a script into its statements at each ';' that is outside a
// string literal, a quoted identifier, a comment and an EXECUTE STATEMENT
// SET BEGIN ... END block (whose inner ';' belong to it), as Flink's SQL
// client does before it sends statements one by one. Empty statements are
// dropped; comments stay in the statement they are part of.
func Split(script string) []string {
	var out []string
	var b strings.Builder
	r := []rune(script)
	flush := func() {
		if s := strings.TrimSpace(b.String()); s != "" && !onlyComments(s) {
			out = append(out, s)
		}
		b.Reset()
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\'' || c == '`' || c == '"':
			j := i + 1
			for j < len(r) && !(r[j] == c && (j+1 >= len(r) || r[j+1] != c)) {
				if r[j] == c {
					j++
				}
				j++
			}
			b.WriteString(string(r[i:min(j+1, len(r))]))
			i = j
		case c == '-' && i+1 < len(r) && r[i+1] == '-':
			j := i
			for j < len(r) && r[j] != '\n' {
				j++
			}
			b.WriteString(string(r[i:j]))
			i = j - 1
		case c == '/' && i+1 < len(r) && r[i+1] == '*':
			j := strings.Index(string(r[i+2:]), "*/")
			end := len(r)
			if j >= 0 {
				end = i + 2 + len([]rune(string(r[i+2:])[:j])) + 2
			}
			b.WriteString(string(r[i:end]))
			i = end - 1
		case c == ';' && startsBlock(b.String()) && !endsBlock(b.String()):
			// Inside EXECUTE STATEMENT SET BEGIN ... END.
			b.WriteRune(c)
		case c == ';':
			flush()
		default:
			b.WriteRune(c)
		}
	}
	flush()
	return out
}

var (
	blockStart = regexp.MustCompile(`(?is)^\s*(EXPLAIN\s+)?EXECUTE\s+STATEMENT\s+SET\s+BEGIN\b`)
	blockEnd   = regexp.MustCompile(`(?is)\bEND\s*$`)
	comments   = regexp.MustCompile(`(?s)--[^\n]*|/\*.*?\*/`)
)

func startsBlock(s string) bool { return blockStart.MatchString(comments.ReplaceAllString(s, " ")) }
func endsBlock(s string) bool {
	return startsBlock(s) && blockEnd.MatchString(comments.ReplaceAllString(s, " "))
}
func onlyComments(s string) bool { return strings.TrimSpace(comments.ReplaceAllString(s, "")) == "" }

// placeholder is ${name}, name as SQLSecretRef's pattern allows.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Placeholders are the names a script writes as ${name}, in order, once.
func Placeholders(script string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(script, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// Substitute replaces each ${name} that values has with its value, as a
// SQL string literal's content (a ' doubled); other text is unchanged.
func Substitute(statement string, values map[string]string) string {
	return placeholder.ReplaceAllStringFunc(statement, func(m string) string {
		v, ok := values[m[2:len(m)-1]]
		if !ok {
			return m
		}
		return strings.ReplaceAll(v, "'", "''")
	})
}

// Redact hides every secret value in a message Flink wrote about a
// statement that had them substituted, before it goes into a condition,
// an event or a log.
func Redact(msg string, values map[string]string) string {
	for _, v := range values {
		if v == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, strings.ReplaceAll(v, "'", "''"), "******")
		msg = strings.ReplaceAll(msg, v, "******")
	}
	return msg
}
