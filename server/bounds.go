package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits bound what clients may hold of the server: how long a
// connection may take to send a request, to read an answer and to wait
// for its next request, and how many connections and event streams may be
// open at once. A zero field takes its DefaultLimits value.
type Limits struct {
	// ReadHeaderTimeout is the longest a client may take to send a
	// request's headers; the connection is then closed.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout is the longest a client may take to send a whole
	// request, its body included: a body still coming is refused 408
	// and its connection closed.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout is the longest one write of an answer may wait for
	// the client to read: a stream or a long runs/wait answer whose
	// client stops reading is dropped after it (its run goes on). It is a
	// deadline for each write, not for the whole answer, so streams may
	// last as long as MaxStream.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConnections is the most connections open at once; one more is
	// answered 429 with Retry-After and closed.
	MaxConnections int `yaml:"max_connections"`
	// MaxStreams is the most event streams open at once, of all tenants;
	// MaxTenantStreams of one tenant. A stream past either is refused 429
	// with Retry-After before anything starts (no run is created).
	MaxStreams       int `yaml:"max_streams"`
	MaxTenantStreams int `yaml:"max_tenant_streams"`
}

// DefaultLimits are the bounds of a server configured with none.
var DefaultLimits = Limits{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
	WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
	MaxConnections: 10_000, MaxStreams: 5_000, MaxTenantStreams: 2_000}

// orDefaults is l with each zero (or negative) field set to its default.
func (l Limits) orDefaults() Limits {
	d := DefaultLimits
	orDefault(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	orDefault(&l.ReadTimeout, d.ReadTimeout)
	orDefault(&l.WriteTimeout, d.WriteTimeout)
	orDefault(&l.IdleTimeout, d.IdleTimeout)
	orDefault(&l.MaxConnections, d.MaxConnections)
	orDefault(&l.MaxStreams, d.MaxStreams)
	orDefault(&l.MaxTenantStreams, d.MaxTenantStreams)
	return l
}

// orDefault sets *v to def when it is not positive.
func orDefault[T time.Duration | int](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// retryAfter is the Retry-After of a refusal past a limit, in seconds.
const retryAfter = 5

// Refusal reasons, the reason label of runner_http_refusals_total.
const (
	refusedConnections   = "connections"    // past MaxConnections
	refusedStreams       = "streams"        // past MaxStreams
	refusedTenantStreams = "tenant_streams" // past MaxTenantStreams
	refusedSlowBody      = "read_timeout"   // a body not sent within ReadTimeout
	refusedSlowReader    = "write_timeout"  // an answer not read within WriteTimeout
)

// newRefusals registers the counter of refusals by reason, each reason
// at zero.
func newRefusals(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "runner_http_refusals_total",
		Help: "Connections and requests refused or dropped past a limit, by reason (connections, streams, tenant_streams, read_timeout, write_timeout)."},
		[]string{"reason"})
	for _, r := range []string{refusedConnections, refusedStreams, refusedTenantStreams, refusedSlowBody, refusedSlowReader} {
		c.WithLabelValues(r)
	}
	reg.MustRegister(c)
	return c
}

// HTTPServer is an http.Server of s with its timeouts; serve it on
// Listener's connections. A connection going idle has its write deadline
// cleared, so a deadline of its last answer never reaches the next one.
func (s *Server) HTTPServer() *http.Server {
	l := s.cfg.Limits
	return &http.Server{Handler: s, ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout, IdleTimeout: l.IdleTimeout,
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateIdle {
				_ = c.SetWriteDeadline(time.Time{})
			}
		}}
}

// Listener is ln accepting at most Limits.MaxConnections connections at
// once: one more is answered 429 with Retry-After and closed.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, open: make(chan struct{}, s.cfg.Limits.MaxConnections),
		refusing: make(chan struct{}, maxRefusing), refused: s.metrics.refusals.WithLabelValues(refusedConnections)}
}

// maxRefusing is the most connections being answered 429 at once; past
// it, a connection over the limit is closed without an answer.
const maxRefusing = 64

// limitListener counts its open connections in open, and answers those
// past its capacity 429.
type limitListener struct {
	net.Listener
	open, refusing chan struct{}
	refused        prometheus.Counter
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.open <- struct{}{}:
			return &countedConn{Conn: c, release: sync.OnceFunc(func() { <-l.open })}, nil
		default:
		}
		l.refused.Inc()
		select {
		case l.refusing <- struct{}{}:
			go func() { refuseConn(c); <-l.refusing }()
		default:
			_ = c.Close()
		}
	}
}

// countedConn gives its place back to its listener when closed.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// refuseConn reads the request on c, answers it 429 and closes c, all
// within a second.
func refuseConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
		_ = req.Body.Close()
	}
	body, _ := json.Marshal(problemf(http.StatusTooManyRequests, "the server has its maximum number of connections open; retry later"))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\nRetry-After: %d\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", retryAfter, len(body), body)
}

// streamCount counts the event streams open, in all and by tenant.
type streamCount struct {
	mu       sync.Mutex
	all      int
	byTenant map[string]int
}

// open takes a place for a stream of tenant, if there is one under the
// limits; else it says which limit refused it.
func (c *streamCount) open(tenant string, l Limits) (reason string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.all >= l.MaxStreams:
		return refusedStreams, false
	case c.byTenant[tenant] >= l.MaxTenantStreams:
		return refusedTenantStreams, false
	}
	if c.byTenant == nil {
		c.byTenant = map[string]int{}
	}
	c.all++
	c.byTenant[tenant]++
	return "", true
}

// close gives back a place open took.
func (c *streamCount) close(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all--
	if c.byTenant[tenant]--; c.byTenant[tenant] == 0 {
		delete(c.byTenant, tenant)
	}
}

// limitStreams lets an event stream (a path ending in /stream) through
// while it is under the limits of streams open in all and of its
// tenant's; past one it is refused 429 with Retry-After.
func (s *Server) limitStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		tenant := principal(r.Context()).Tenant
		reason, ok := s.streams.open(tenant, s.cfg.Limits)
		if !ok {
			s.metrics.refusals.WithLabelValues(reason).Inc()
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
			which := "the server"
			if reason == refusedTenantStreams {
				which = "your tenant"
			}
			s.writeProblem(w, problemf(http.StatusTooManyRequests, "%s has its maximum number of event streams open; close one or retry later", which))
			return
		}
		defer s.streams.close(tenant)
		next.ServeHTTP(w, r)
	})
}

// bound gives each write of an answer WriteTimeout to reach the client,
// and its body ReadTimeout to arrive (the connection's read deadline): a
// body that does not is refused 408, an answer not read is dropped, each
// counted.
func (s *Server) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &boundWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.cfg.Limits.WriteTimeout,
			refused: s.metrics.refusals}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &boundBody{ReadCloser: r.Body, refused: s.metrics.refusals}
		}
		next.ServeHTTP(bw, r)
		bw.extend() // for what the server writes after the handler
	})
}

// boundWriter sets the connection's write deadline before each write and
// flush of an answer.
type boundWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	refused *prometheus.CounterVec
	dropped bool
}

func (w *boundWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *boundWriter) Write(b []byte) (int, error) {
	w.extend()
	n, err := w.ResponseWriter.Write(b)
	w.check(err)
	return n, err
}

// FlushError flushes the answer (http.ResponseController's Flush).
func (w *boundWriter) FlushError() error {
	w.extend()
	err := w.rc.Flush()
	w.check(err)
	return err
}

// check counts the answer dropped the first time a write timed out.
func (w *boundWriter) check(err error) {
	if !w.dropped && errors.Is(err, os.ErrDeadlineExceeded) {
		w.dropped = true
		w.refused.WithLabelValues(refusedSlowReader).Inc()
	}
}

// Unwrap is the writer underneath.
func (w *boundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// boundBody is a request body whose read past the connection's read
// deadline is a 408 problem, counted once.
type boundBody struct {
	io.ReadCloser
	refused  *prometheus.CounterVec
	timedOut bool
}

func (b *boundBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if !b.timedOut {
			b.timedOut = true
			b.refused.WithLabelValues(refusedSlowBody).Inc()
		}
		return n, problemf(http.StatusRequestTimeout, "the request body did not arrive within the read timeout")
	}
	return n, err
}
