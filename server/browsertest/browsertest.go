// Package browsertest drives pages in headless Chromium for the browser
// suites (the console's, agent-chat-ui's) against runner's server: it
// starts the server on a store of the test's own, and Debian's chromium
// (skipping the test where none is installed, failing under CI), opens
// tabs in browser contexts of their own, waits for conditions on the
// page and saves screenshots. Every failure fails the test it was given,
// naming what was awaited, with a screenshot of the page.
package browsertest

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/server"
)

// Patience multiplies every wait: CI runs the suites beside other
// packages' tests under -race, where a page takes several times as long
// as on a quiet machine. A wait bounds how long a suite waits before it
// fails, it measures nothing.
const Patience = 3

// Chromium starts Debian's headless Chromium (or $RUNNER_CHROMIUM) for
// the test, or skips it when none is installed; under CI a missing one
// fails the test (.ci/run installs it).
func Chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("RUNNER_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on CI: .ci/run installs it (apt-get install chromium)")
		}
		t.Skip("no Chromium installed: the browser suites need it (apt-get install -y chromium, or RUNNER_CHROMIUM=path)")
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900)}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("chromium %s: %v", path, err)
	}
	return ctx
}

// Serve starts runner's server with cfg on a SQLite store of the test's
// own, for as long as the test lasts, and returns its URL.
func Serve(t *testing.T, cfg server.Config) string {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		st.Close()
	})
	return hs.URL
}

// Browser is one tab in a browser context of its own (its own storage),
// failing T on an error.
type Browser struct {
	T   *testing.T
	Ctx context.Context
	// Dir receives the screenshots; Name prefixes a failure's.
	Dir, Name string
}

// Open opens a tab in a new browser context of root, for as long as the
// test lasts. Its screenshots go to $RUNNER_SCREENSHOTS/suite, or to the
// test's temporary directory when that is unset.
func Open(t *testing.T, root context.Context, suite, name string) *Browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	dir := t.TempDir()
	if d := os.Getenv("RUNNER_SCREENSHOTS"); d != "" {
		dir = filepath.Join(d, suite)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx); err != nil { // opens the tab, for as long as ctx lives
		t.Fatal(err)
	}
	return &Browser{T: t, Ctx: ctx, Dir: dir, Name: name}
}

// For is the same tab failing t (a subtest) under name.
func (b *Browser) For(t *testing.T, name string) *Browser {
	c := *b
	c.T, c.Name = t, name
	return &c
}

// Do runs steps, failing the test (with a screenshot) on an error.
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Patience*20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.Shot("failed-" + b.Name)
		b.T.Fatalf("%s: %v", b.Name, err)
	}
}

// Until waits for a JavaScript condition to hold.
func (b *Browser) Until(what, cond string, within time.Duration) {
	b.T.Helper()
	within *= Patience
	ctx, cancel := context.WithTimeout(b.Ctx, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.Shot("failed-" + b.Name)
		b.T.Fatalf("%s: %s: %v (page: %.600s)", b.Name, what, err, b.Text("document.body.innerText"))
	}
}

// Text evaluates an expression to a string.
func (b *Browser) Text(expr string) string {
	ctx, cancel := context.WithTimeout(b.Ctx, Patience*10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// Shot writes a screenshot of the page to Dir as name.png.
func (b *Browser) Shot(name string) {
	ctx, cancel := context.WithTimeout(b.Ctx, Patience*10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.T.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.Dir, name+".png"), png, 0o644); err != nil {
		b.T.Log(err)
	}
}
