package platform

import "strings"

// TourHeading is the README section `datapilot-local up` prints the
// commands of, and test/e2e runs steps of as written.
const TourHeading = "## A five-minute tour"

// TourStep is one shell block of the README's tour.
type TourStep struct {
	// Title is the bold words that open the paragraph before the block
	// ("A session cluster."), "" when that paragraph has none.
	Title string
	// Lines are the block's lines as written.
	Lines []string
}

// Tour reads the steps of the README's tour: every ```sh block between
// TourHeading and the next "## " heading. Reading them from the README,
// rather than keeping a copy, keeps what `make run` prints the same as
// what the README says.
func Tour(readme string) []TourStep {
	var steps []TourStep
	// block is the fenced block the line is in: "sh", another
	// language's, or "" outside any.
	in, block := false, ""
	// para is the paragraph before the block; a blank line ends it, the
	// next line of text starts another.
	var para []string
	ended := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case !in:
			in = strings.TrimSpace(line) == TourHeading
		case block != "" && strings.HasPrefix(line, "```"):
			block, para = "", nil
		case block == "sh":
			steps[len(steps)-1].Lines = append(steps[len(steps)-1].Lines, line)
		case block != "":
		case strings.HasPrefix(line, "## "):
			return steps
		case strings.HasPrefix(line, "```"):
			block = strings.TrimSpace(strings.TrimPrefix(line, "```"))
			if block == "sh" {
				steps = append(steps, TourStep{Title: boldOpening(para)})
			} else if block == "" {
				block = "text"
			}
		case strings.TrimSpace(line) == "":
			ended = true
		default:
			if ended {
				para, ended = nil, false
			}
			para = append(para, line)
		}
	}
	return steps
}

// boldOpening is the text between the ** that open a paragraph.
func boldOpening(para []string) string {
	if len(para) == 0 || !strings.HasPrefix(para[0], "**") {
		return ""
	}
	rest := strings.Join(para, " ")[2:]
	if i := strings.Index(rest, "**"); i >= 0 {
		return rest[:i]
	}
	return ""
}

// Commands are the step's shell commands: a line ending in "|" or "\",
// or inside a quoted string, continues on the next.
func (s TourStep) Commands() []string {
	var out []string
	var b strings.Builder
	var quote rune
	for _, l := range s.Lines {
		b.WriteString(l)
		quote = openQuote(l, quote)
		if t := strings.TrimSpace(l); quote != 0 || strings.HasSuffix(t, "|") || strings.HasSuffix(t, `\`) {
			b.WriteString("\n")
			continue
		}
		if strings.TrimSpace(b.String()) != "" {
			out = append(out, b.String())
		}
		b.Reset()
	}
	if strings.TrimSpace(b.String()) != "" {
		out = append(out, b.String())
	}
	return out
}

// openQuote is the quote (' or ") still open at the end of a line that
// starts inside quote (0: none), as sh reads quotes: nothing escapes in
// single quotes, a backslash escapes in double quotes and outside, and a
// # that starts a word outside quotes starts a comment.
func openQuote(line string, quote rune) rune {
	escaped, prev := false, ' '
	for _, c := range line {
		word := prev == ' ' || prev == '\t'
		prev = c
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quote != '\'':
			escaped = true
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case c == quote:
			quote = 0
		case quote == 0 && c == '#' && word:
			return 0
		}
	}
	return quote
}
