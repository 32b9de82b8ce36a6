package builtins

import (
	"net/http"
	"testing"
	"time"

	"github.com/runner-dev/runner/dsl"
)

// TestHTTPHeaderWaitCoversTimeout checks that an http tool with a long
// timeout (Choregraph's run endpoint: 120s) is not cut off by the
// transport's wait for response headers first.
func TestHTTPHeaderWaitCoversTimeout(t *testing.T) {
	for _, c := range []struct {
		timeout, want time.Duration
	}{{0, headerWait}, {5 * time.Second, headerWait}, {120 * time.Second, 120 * time.Second}} {
		tr := newHTTPTool("t", &dsl.HTTPDef{}, c.timeout).client.Transport.(*http.Transport)
		if tr.ResponseHeaderTimeout != c.want {
			t.Errorf("timeout %s: the header wait is %s, want %s", c.timeout, tr.ResponseHeaderTimeout, c.want)
		}
	}
}
