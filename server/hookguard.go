package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A run's own webhook URL comes from any API client, so the server must
// not be made to POST to what only it can reach: loopback, private,
// link-local (the cloud metadata address 169.254.169.254 among them),
// shared (100.64.0.0/10) or unspecified addresses. The URL is checked
// when the run is created — its host, or every address its name
// resolves to — and again when a delivery connects, by the dialer's
// Control func, so a name that resolves elsewhere by then (DNS
// rebinding) or a redirect cannot reach them either. runner.yaml's
// webhooks_allow lets chosen networks or hosts through.

// hookGuard decides which addresses a run's own webhook may reach.
type hookGuard struct {
	nets  []netip.Prefix
	hosts []string // lower case
}

// shared is the shared address space of carrier-grade NAT, where some
// clouds keep their metadata service (100.100.100.200).
var shared = netip.MustParsePrefix("100.64.0.0/10")

// newHookGuard reads allow: CIDRs, addresses and host names.
func newHookGuard(allow []string) (*hookGuard, error) {
	g := &hookGuard{}
	for i, a := range allow {
		if p, err := netip.ParsePrefix(a); err == nil {
			g.nets = append(g.nets, p.Masked())
		} else if ip, err := netip.ParseAddr(a); err == nil {
			g.nets = append(g.nets, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		} else if a != "" && !strings.ContainsAny(a, "/:[] ") {
			g.hosts = append(g.hosts, strings.ToLower(a))
		} else {
			return nil, fmt.Errorf("server: webhooks_allow[%d]: %q is no CIDR (10.0.0.0/8), address or host name", i, a)
		}
	}
	return g, nil
}

// allowsHost reports whether host is let through by name.
func (g *hookGuard) allowsHost(host string) bool {
	return slices.Contains(g.hosts, strings.ToLower(strings.TrimSuffix(host, ".")))
}

// allowsIP reports whether a webhook may connect to ip: a public address,
// or one of an allowed network.
func (g *hookGuard) allowsIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range g.nets {
		if p.Contains(ip) {
			return true
		}
	}
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || shared.Contains(ip) ||
		ip.Is4() && ip.As4()[0] == 0)
}

// checkURL refuses a webhook URL whose host is, or resolves to, an
// address the guard keeps closed.
func (g *hookGuard) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if g.allowsHost(host) {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.refuse(host, ip)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("its host %s cannot be resolved: %w", host, err)
	}
	for _, ip := range ips {
		if err := g.refuse(host, ip); err != nil {
			return err
		}
	}
	return nil
}

// errClosedAddress is the error of a webhook refused its address.
var errClosedAddress = errors.New("a run's webhook may not reach loopback, private, link-local or metadata addresses; runner.yaml's webhooks_allow lets a network or host through")

// refuse is the error of host at ip when the guard keeps ip closed.
func (g *hookGuard) refuse(host string, ip netip.Addr) error {
	if g.allowsIP(ip) {
		return nil
	}
	if host == ip.String() {
		return fmt.Errorf("%s: %w", ip, errClosedAddress)
	}
	return fmt.Errorf("%s is %s: %w", host, ip, errClosedAddress)
}

// control is the dialer's Control func: it refuses a connection to an
// address the guard keeps closed, whatever name led there.
func (g *hookGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	return g.refuse(ap.Addr().String(), ap.Addr())
}

// clients are the HTTP clients of the deliveries: open goes anywhere,
// for the configured hooks (the operator's) and a run's own to a host
// allowed by name; guarded, for the other runs' own, through the guard.
// Neither follows a redirect.
func (g *hookGuard) clients() (open, guarded *http.Client) {
	client := func(control func(string, string, syscall.RawConn) error) *http.Client {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: control}
		tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: postWorkers, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true}
		noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return &http.Client{Timeout: postTimeout, Transport: tr, CheckRedirect: noRedirect}
	}
	open = client(nil)
	open.Transport.(*http.Transport).Proxy = http.ProxyFromEnvironment
	return open, client(g.control)
}
