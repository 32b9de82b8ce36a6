// Package console is the web console of runner serve: plain HTML, CSS and
// ES modules embedded in the binary and served under /ui/, gzip-compressed,
// with ETags and a strict Content-Security-Policy. The console is a client
// of the server's HTTP API like any SDK — it sends the key it was given as
// x-api-key on each call — and adds no endpoint of its own besides its
// files, which hold no data and need no key.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed assets
var files embed.FS

// Prefix is where the console is served.
const Prefix = "/ui/"

// CSP is the Content-Security-Policy of every console file: scripts,
// styles and calls only from the server itself, no inline script or
// style, no framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset is one file as it is served: its bytes, gzipped bytes, type and
// ETag (its hash).
type asset struct {
	body, gz    []byte
	ctype, etag string
}

// assets are the console's files by their path under Prefix, read and
// compressed once, on first use.
var assets = sync.OnceValue(func() map[string]*asset {
	out := map[string]*asset{}
	root, _ := fs.Sub(files, "assets")
	_ = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		out[p] = &asset{body: body, gz: gz.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return out
})

// Front serves the console under Prefix, sends a browser that asks for
// / (Accept: text/html) to it, and hands every other request to next.
func Front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" && readable(r) && strings.Contains(r.Header.Get("Accept"), "text/html"),
			r.URL.Path == strings.TrimSuffix(Prefix, "/"):
			http.Redirect(w, r, Prefix, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, Prefix):
			serve(w, r, strings.TrimPrefix(r.URL.Path, Prefix))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func readable(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }

// serve answers with the file name (index.html for ""), gzipped when the
// client takes it, 304 when its ETag is the client's.
func serve(w http.ResponseWriter, r *http.Request, name string) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !readable(r) {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the console's files are read with GET", http.StatusMethodNotAllowed)
		return
	}
	if name == "" {
		name = "index.html"
	}
	a := assets()[name]
	if a == nil {
		http.Error(w, "no console file "+name, http.StatusNotFound)
		return
	}
	h.Set("Vary", "Accept-Encoding")
	h.Set("Cache-Control", "no-cache") // revalidated with the ETag each time
	h.Set("ETag", a.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.ctype)
	body := a.body
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether the request's Accept-Encoding lists gzip
// without refusing it (q=0).
func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(enc), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") || strings.Contains(params, "q=0.")
		}
	}
	return false
}
