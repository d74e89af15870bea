package report

import (
	"html"
	"strings"
)

// markdownHTML renders the small Markdown subset docs/findings.md uses:
// ATX headings, paragraphs, pipe tables, bullet lists, fenced code, and
// inline code, links, **bold** and *emphasis*. Everything else is text:
// every character of the source is escaped, so markup written in the
// Markdown (a run's name, a stray <script>) shows as text and runs
// nothing. HTML comments (the findings generator's table specs) are
// dropped. link maps a link's target to the href to write, or "" to keep
// only its text (a target the site does not hold).
func markdownHTML(src string, link func(string) string) string {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var b strings.Builder
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inlineHTML(strings.Join(para, " "), link) + "</p>\n")
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "<!--"):
			flush()
			for ; i < len(lines) && !strings.Contains(lines[i], "-->"); i++ {
			}
		case strings.HasPrefix(trimmed, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			b.WriteString("<pre><code>" + html.EscapeString(strings.Join(code, "\n")) + "</code></pre>\n")
		case headingLevel(trimmed) > 0:
			flush()
			n := headingLevel(trimmed)
			text := strings.TrimSpace(trimmed[n:])
			tag := string(rune('0' + n))
			b.WriteString("<h" + tag + ` id="` + html.EscapeString(slug(text)) + `">` + inlineHTML(text, link) + "</h" + tag + ">\n")
		case strings.HasPrefix(trimmed, "|"):
			flush()
			var rows [][]string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, tableCells(lines[i]))
			}
			i--
			b.WriteString(tableHTML(rows, link))
		case strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "* "):
			flush()
			b.WriteString("<ul>\n")
			for ; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				if strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") {
					b.WriteString("<li>" + inlineHTML(t[2:], link))
				} else if t != "" && strings.HasPrefix(lines[i], "  ") {
					b.WriteString(" " + inlineHTML(t, link))
					continue
				} else {
					break
				}
				b.WriteString("</li>\n")
			}
			i--
			b.WriteString("</ul>\n")
		default:
			para = append(para, trimmed)
		}
	}
	flush()
	return b.String()
}

func headingLevel(s string) int {
	n := 0
	for n < len(s) && n < 6 && s[n] == '#' {
		n++
	}
	if n == 0 || n >= len(s) || s[n] != ' ' {
		return 0
	}
	return n
}

// slug is a heading's anchor: "Experiment A" → "experiment-a".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" || c == "" {
			return false
		}
	}
	return true
}

func tableHTML(rows [][]string, link func(string) string) string {
	var b strings.Builder
	b.WriteString("<table>\n")
	body := rows
	if len(rows) >= 2 && isSeparator(rows[1]) {
		b.WriteString("<tr>")
		for _, c := range rows[0] {
			b.WriteString("<th>" + inlineHTML(c, link) + "</th>")
		}
		b.WriteString("</tr>\n")
		body = rows[2:]
	}
	for _, r := range body {
		b.WriteString("<tr>")
		for _, c := range r {
			b.WriteString("<td>" + inlineHTML(c, link) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
	return b.String()
}

// inlineHTML renders `code`, [text](target), **bold** and *emphasis*,
// escaping every other character.
func inlineHTML(s string, link func(string) string) string {
	var b strings.Builder
	for len(s) > 0 {
		switch {
		case s[0] == '`':
			if end := strings.IndexByte(s[1:], '`'); end >= 0 {
				b.WriteString("<code>" + html.EscapeString(s[1:1+end]) + "</code>")
				s = s[2+end:]
				continue
			}
		case s[0] == '[':
			if text, target, rest, ok := splitLink(s); ok {
				inner := inlineHTML(text, link)
				if href := link(target); href != "" {
					b.WriteString(`<a href="` + html.EscapeString(href) + `">` + inner + "</a>")
				} else {
					b.WriteString(inner)
				}
				s = rest
				continue
			}
		case strings.HasPrefix(s, "**"):
			if end := strings.Index(s[2:], "**"); end > 0 {
				b.WriteString("<strong>" + inlineHTML(s[2:2+end], link) + "</strong>")
				s = s[4+end:]
				continue
			}
		case s[0] == '*' && len(s) > 1 && s[1] != ' ':
			if end := strings.IndexByte(s[1:], '*'); end > 0 {
				b.WriteString("<em>" + inlineHTML(s[1:1+end], link) + "</em>")
				s = s[2+end:]
				continue
			}
		}
		b.WriteString(html.EscapeString(s[:1]))
		s = s[1:]
	}
	return b.String()
}

// splitLink splits "[text](target)rest"; nested brackets are not
// supported (findings.md has none).
func splitLink(s string) (text, target, rest string, ok bool) {
	close := strings.Index(s, "](")
	if close < 0 || strings.ContainsAny(s[1:close], "[]") {
		return "", "", "", false
	}
	end := strings.IndexByte(s[close+2:], ')')
	if end < 0 {
		return "", "", "", false
	}
	return s[1:close], strings.TrimSpace(s[close+2 : close+2+end]), s[close+3+end:], true
}
