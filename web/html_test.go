package web

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// parseHTML parses a page.
func parseHTML(t testing.TB, body []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	return doc
}

// walk calls fn on every node of the tree.
func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// textOf is the text a reader sees of a tree.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
	})
	return b.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// elements returns the elements named tag (every element for "").
func elements(doc *html.Node, tag string) []*html.Node {
	var out []*html.Node
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) {
			out = append(out, n)
		}
	})
	return out
}

// checkInert fails when a page holds anything a suite's payload could have turned active: a
// script other than the viewer's own file, an inline script or style, an event handler, a
// javascript: URL, an image, a frame or an object.
func checkInert(t testing.TB, doc *html.Node, allowScript bool) {
	t.Helper()
	for _, n := range elements(doc, "") {
		switch n.Data {
		case "script":
			src, _ := attr(n, "src")
			if !allowScript || src != "/assets/live.js" || n.FirstChild != nil {
				t.Errorf("a script element that is not the viewer's: src=%q", src)
			}
		case "img", "iframe", "object", "embed", "base", "frame":
			t.Errorf("a %s element", n.Data)
		}
		for _, a := range n.Attr {
			key := strings.ToLower(a.Key)
			if strings.HasPrefix(key, "on") || key == "style" || key == "srcdoc" {
				t.Errorf("<%s> carries the attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if key == "href" || key == "src" || key == "action" || key == "formaction" {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") || strings.HasPrefix(v, "//") || strings.Contains(v, "://") {
					t.Errorf("<%s %s=%q> leaves the page or runs code", n.Data, a.Key, a.Val)
				}
			}
		}
	}
}
