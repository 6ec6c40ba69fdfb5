package docs

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// This file reads the little of Markdown the link check needs: headings,
// links and the spans where neither counts (code).

// slugger gives a document's headings their anchors as GitHub does
// (github-slugger, which github.com's renderer follows): lower case, every
// character but letters, marks, digits, connector punctuation (_), hyphens
// and spaces dropped, each space a hyphen; a slug already taken gets -1,
// -2, ... (and a suffixed slug taken by a heading of its own skips on).
type slugger struct{ seen map[string]int }

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

func (s *slugger) slug(heading string) string {
	base := baseSlug(heading)
	result := base
	for {
		if _, taken := s.seen[result]; !taken {
			break
		}
		s.seen[base]++
		result = fmt.Sprintf("%s-%d", base, s.seen[base])
	}
	s.seen[result] = 0
	return result
}

// baseSlug is the slug of one heading's text, before duplicates count.
func baseSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(headingText(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// headingText is the text a heading renders: code spans keep their text,
// links and images their label, HTML tags nothing.
func headingText(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	h = inlineLink.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	return strings.TrimSpace(h)
}

// doc is what one Markdown file offers and asks for.
type doc struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	line int
	dest string
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	fence      = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	// A link's destination, in an inline link or image: up to the first
	// space (a title may follow) or the closing parenthesis, one level of
	// parentheses allowed inside.
	linkDest = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	refDef   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(\S+)`)
	htmlID   = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:name|id)="([^"]+)"`)
)

// parse reads a Markdown document's anchors and links, outside fenced
// code blocks and code spans.
func parse(text string) doc {
	d := doc{anchors: map[string]bool{}}
	s := newSlugger()
	var open string // the fence of the code block we are in
	for i, line := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), m[1][:1])) == "":
				open = ""
				continue
			}
		}
		if open != "" {
			continue
		}
		// A heading's code spans keep their text in its anchor; links
		// are looked for outside code spans only.
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			d.anchors[s.slug(m[2])] = true
		}
		line = stripCodeSpans(line)
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		for _, m := range linkDest.FindAllStringSubmatch(line, -1) {
			d.links = append(d.links, link{line: i + 1, dest: strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			d.links = append(d.links, link{line: i + 1, dest: strings.Trim(m[1], "<>")})
		}
	}
	return d
}

// stripCodeSpans blanks the code spans of one line: a run of backticks up
// to the next run of the same length.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		run := strings.Repeat("`", n)
		end := -1
		for j := i + n; j < len(line); {
			k := strings.Index(line[j:], run)
			if k < 0 {
				break
			}
			k += j
			if (k+n == len(line) || line[k+n] != '`') && (k == 0 || line[k-1] != '`') {
				end = k
				break
			}
			j = k + 1
		}
		if end < 0 {
			// An unmatched run is literal backticks.
			b.WriteString(run)
			i += n
			continue
		}
		b.WriteString("code")
		i = end + n
	}
	return b.String()
}

// relative splits a destination into a repository path and an anchor;
// ok is false for what leaves the repository (a scheme, //host).
func relative(dest string) (path, anchor string, ok bool) {
	if dest == "" || strings.HasPrefix(dest, "//") {
		return "", "", false
	}
	u, err := url.Parse(dest)
	if err != nil {
		// Not a URL: take it as a path, so the check reports it.
		return dest, "", true
	}
	if u.Scheme != "" || u.Host != "" {
		return "", "", false
	}
	return u.Path, u.Fragment, true
}
