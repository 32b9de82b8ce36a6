package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// get serves a request of path through Front, with headers h (name, value, ...).
func get(t *testing.T, path string, h ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	rec := httptest.NewRecorder()
	Front(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })).ServeHTTP(rec, req)
	return rec.Result()
}

// TestServe: the console's files are served under /ui/ with their type,
// the strict CSP, an ETag that answers 304, and gzip when the client
// takes it; / sends a browser (and only a browser) to /ui/.
func TestServe(t *testing.T) {
	cases := []struct {
		name, path string
		header     []string
		status     int
		location   string
	}{
		{"browser at /", "/", []string{"Accept", "text/html,application/xhtml+xml"}, http.StatusFound, "/ui/"},
		{"API client at /", "/", []string{"Accept", "application/json"}, http.StatusTeapot, ""},
		{"/ui", "/ui", nil, http.StatusFound, "/ui/"},
		{"index", "/ui/", nil, http.StatusOK, ""},
		{"module", "/ui/js/main.js", nil, http.StatusOK, ""},
		{"unknown file", "/ui/js/nothing.js", nil, http.StatusNotFound, ""},
		{"the API", "/threads/x", []string{"Accept", "text/html"}, http.StatusTeapot, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := get(t, c.path, c.header...)
			if resp.StatusCode != c.status || resp.Header.Get("Location") != c.location {
				t.Fatalf("GET %s = %d, Location %q; want %d, %q", c.path, resp.StatusCode, resp.Header.Get("Location"), c.status, c.location)
			}
			if strings.HasPrefix(c.path, "/ui/") && resp.Header.Get("Content-Security-Policy") != CSP {
				t.Errorf("CSP %q", resp.Header.Get("Content-Security-Policy"))
			}
		})
	}
	resp := get(t, "/ui/js/main.js", "Accept-Encoding", "gzip, deflate")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("main.js is %q, want text/javascript (modules must be served as JavaScript)", ct)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	if !bytes.Contains(body, []byte("export")) && !bytes.Contains(body, []byte("import")) {
		t.Errorf("main.js unzipped is not the module: %.80q", body)
	}
	etag := resp.Header.Get("ETag")
	if again := get(t, "/ui/js/main.js", "If-None-Match", etag); etag == "" || again.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s = %d, want 304", etag, again.StatusCode)
	}
	if plain := get(t, "/ui/js/main.js", "Accept-Encoding", "gzip;q=0"); plain.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got %q", plain.Header.Get("Content-Encoding"))
	}
}

// TestAssetBudget: the embedded files add at most 3 MB to the binary, and
// what a first visit loads — all the files, an upper bound of the page's
// share — transfers at most 500 KB gzip-compressed.
func TestAssetBudget(t *testing.T) {
	raw, zipped := 0, 0
	for name, a := range assets() {
		raw += len(a.body)
		zipped += len(a.gz)
		if len(a.gz) > len(a.body) {
			t.Logf("%s grows when compressed (%d > %d)", name, len(a.gz), len(a.body))
		}
	}
	t.Logf("console: %d files, %d bytes, %d gzipped", len(assets()), raw, zipped)
	if raw > 3<<20 {
		t.Errorf("the console's files are %d bytes, over 3 MB", raw)
	}
	if zipped > 500<<10 {
		t.Errorf("a first load transfers %d bytes gzipped, over 500 KB", zipped)
	}
}

// TestAssetsSelfContained: nothing is loaded from another host (no CDN,
// the console works offline and behind a firewall), no inline script or
// style (the CSP forbids them), and no data becomes markup (innerHTML,
// outerHTML, insertAdjacentHTML, document.write are never used).
func TestAssetsSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9-]+(\.[a-z0-9-]+)+|@import|url\(\s*['"]?(https?:|//)`)
	markup := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	inline := regexp.MustCompile(`(?i)<script(\s[^>]*)?>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=`)
	root, _ := fs.Sub(files, "assets")
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(root, p)
		src := string(b)
		if strings.HasSuffix(p, ".js") { // the SVG namespace is a name, not a place to load from
			src = strings.ReplaceAll(src, "'http://www.w3.org/2000/svg'", "")
		}
		if m := external.FindString(src); m != "" {
			t.Errorf("%s refers to another host: %q", p, m)
		}
		if m := markup.FindString(src); m != "" {
			t.Errorf("%s turns text into markup: %q", p, m)
		}
		if strings.HasSuffix(p, ".html") {
			if m := inline.FindString(src); m != "" {
				t.Errorf("%s has inline script or style: %q", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
