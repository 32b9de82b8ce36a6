package testrun

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// Item kinds: what a Test can take of a pipeline or a rule set.
const (
	ItemStart     = "start"     // a route of a conditional start
	ItemRoute     = "route"     // a route of a node's next
	ItemOnError   = "on_error"  // an entry of a node's on_error
	ItemInterrupt = "interrupt" // an interrupt node, resumed
	ItemRule      = "rule"      // a rule, fired
	ItemDecision  = "decision"  // a decision a require_hitl rule allows, made
)

// Coverage is what a suite's Tests took of a project's definitions: of
// each pipeline, every route (a conditional start's, every `when` of a
// node's next and its default), every on_error entry and every interrupt
// node resumed; of each rule set, every rule fired and every decision its
// require_hitl rules allow made. A rule is known by its key (a tenant's
// by its tenant too). It is read from the events the runs emit.
type Coverage struct {
	Taken  int     `json:"taken"`
	Total  int     `json:"total"`
	Groups []Group `json:"groups"`
}

// Group is the items of one pipeline or rule set, in file order.
type Group struct {
	Kind string `json:"kind"` // Pipeline or RuleSet
	Name string `json:"name"`
	// Tenant is a tenant's rule set's tenant.
	Tenant string `json:"tenant,omitempty"`
	Taken  int    `json:"taken"`
	Total  int    `json:"total"`
	Items  []Item `json:"items"`
}

// Item is one thing a Test can take, where it is written, and how many
// times the Tests took it.
type Item struct {
	Kind string  `json:"kind"`
	What string  `json:"what"`
	Pos  dsl.Pos `json:"position"`
	Hits int     `json:"hits"`
}

// Percent is the share of items taken (100 when there are none).
func (c *Coverage) Percent() float64 { return percent(c.Taken, c.Total) }

// Percent is the share of the group's items taken.
func (g *Group) Percent() float64 { return percent(g.Taken, g.Total) }

func percent(taken, total int) float64 {
	if total == 0 {
		return 100
	}
	return 100 * float64(taken) / float64(total)
}

// mark names what one event took: the owner is the pipeline (of a route,
// an on_error entry or an interrupt) or the tenant of a tenant's rule;
// name the node or the rule's key.
type mark struct {
	owner, kind, name string
	index             int
	decision          string
}

// coverage lays the hits over proj's pipelines and rule sets.
func coverage(proj *dsl.Project, hits map[mark]int) *Coverage {
	c := &Coverage{}
	for _, p := range sortedDocs(proj.Pipelines, func(p *dsl.Pipeline) *dsl.Document { return p.Doc }) {
		c.add(Group{Kind: dsl.KindPipeline, Name: p.Name, Items: pipelineItems(p, hits)})
	}
	for _, rs := range sortedDocs(proj.RuleSets, func(rs *dsl.RuleSet) *dsl.Document { return rs.Doc }) {
		c.add(Group{Kind: dsl.KindRuleSet, Name: rs.Name, Tenant: rs.Tenant, Items: ruleItems(rs, hits)})
	}
	return c
}

// Seen returns c with the groups of the tenants sees says are seen only
// (a rule set of another tenant is not), its totals counted again.
func (c *Coverage) Seen(sees func(tenant string) bool) *Coverage {
	out := &Coverage{}
	for _, g := range c.Groups {
		if sees(g.Tenant) {
			out.add(g)
		}
	}
	return out
}

// add adds g, with its items counted, unless it has none.
func (c *Coverage) add(g Group) {
	if len(g.Items) == 0 {
		return
	}
	g.Taken, g.Total = 0, 0
	for _, it := range g.Items {
		g.Total++
		if it.Hits > 0 {
			g.Taken++
		}
	}
	c.Groups = append(c.Groups, g)
	c.Taken += g.Taken
	c.Total += g.Total
}

// sortedDocs returns the values of m in the order of their documents.
func sortedDocs[T any](m map[string]T, doc func(T) *dsl.Document) []T {
	return slices.SortedFunc(maps.Values(m), func(a, b T) int {
		pa, pb := doc(a).Pos(doc(a).Root), doc(b).Pos(doc(b).Root)
		return cmp.Or(cmp.Compare(pa.File, pb.File), cmp.Compare(pa.Line, pb.Line))
	})
}

// pipelineItems are p's routes, on_error entries and interrupt nodes.
func pipelineItems(p *dsl.Pipeline, hits map[mark]int) []Item {
	var out []Item
	for i, r := range p.StartRoutes {
		out = append(out, Item{Kind: ItemStart, What: "start" + routeText(r), Pos: r.Pos,
			Hits: hits[mark{owner: p.Name, kind: ItemStart, index: i}]})
	}
	for _, n := range p.Nodes {
		for i, r := range n.Next {
			out = append(out, Item{Kind: ItemRoute, What: n.Name + routeText(r), Pos: r.Pos,
				Hits: hits[mark{owner: p.Name, kind: ItemRoute, name: n.Name, index: i}]})
		}
		for i, c := range n.OnError {
			kinds := "any error"
			if len(c.When) > 0 {
				kinds = strings.Join(c.When, ", ")
			}
			out = append(out, Item{Kind: ItemOnError, What: fmt.Sprintf("%s on_error → %s (%s)", n.Name, c.To, kinds), Pos: c.Pos,
				Hits: hits[mark{owner: p.Name, kind: ItemOnError, name: n.Name, index: i}]})
		}
		if n.Type == "interrupt" {
			out = append(out, Item{Kind: ItemInterrupt, What: n.Name + " resumed", Pos: n.Pos,
				Hits: hits[mark{owner: p.Name, kind: ItemInterrupt, name: n.Name}]})
		}
	}
	return out
}

// routeText renders a route: " → to (when …)" or " → to (default)".
func routeText(r *dsl.Route) string {
	if r.When == nil || r.When.Program == nil {
		return " → " + r.To + " (default)"
	}
	return " → " + r.To + " (when " + r.When.Program.Text() + ")"
}

// ruleItems are rs's rules and the decisions its require_hitl rules
// allow.
func ruleItems(rs *dsl.RuleSet, hits map[mark]int) []Item {
	var out []Item
	for _, r := range rs.Rules {
		out = append(out, Item{Kind: ItemRule, What: r.Key + " fires (" + r.On + ")", Pos: r.Pos,
			Hits: hits[mark{owner: rs.Tenant, kind: ItemRule, name: r.Key}]})
		if r.HITL == nil {
			continue
		}
		for _, d := range runner.AllowedDecisions(r.HITL, r.On) {
			out = append(out, Item{Kind: ItemDecision, What: r.Key + ": " + d, Pos: r.ActionPos,
				Hits: hits[mark{owner: rs.Tenant, kind: ItemDecision, name: r.Key, decision: d}]})
		}
	}
	return out
}

// tracker reads one Test's events into hits: which pipeline each thread
// runs (from run_start), and which routes, on_error entries, rules,
// decisions and resumed interrupts its runs took.
type tracker struct {
	mu        sync.Mutex // parallel branches send events at once
	hits      map[mark]int
	tenant    string            // the Test's
	pipelines map[string]string // by thread
	owners    map[string]string // a fired rule's owner, by key
}

func newTracker(hits map[mark]int, tenant string) *tracker {
	return &tracker{hits: hits, tenant: tenant, pipelines: map[string]string{}, owners: map[string]string{}}
}

// event counts what ev took.
func (t *tracker) event(ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	if d == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pipelines[ev.Thread]
	switch ev.Type {
	case runner.EventRunStart:
		p, _ = d["pipeline"].(string)
		t.pipelines[ev.Thread] = p
		if i, ok := d["route"].(int); ok {
			t.hits[mark{owner: p, kind: ItemStart, index: i}]++
		}
	case runner.EventNodeEnd:
		if i, ok := d["route"].(int); ok {
			t.hits[mark{owner: p, kind: ItemRoute, name: ev.Node, index: i}]++
		}
	case runner.EventError:
		if i, ok := d["catch"].(int); ok {
			t.hits[mark{owner: p, kind: ItemOnError, name: ev.Node, index: i}]++
		}
	case runner.EventRule:
		t.rule(p, ev.Node, d)
	}
}

// rule counts a rule event: a rule fired, a reviewer's decisions on its
// gate, a gate's expiry deciding for them, or an interrupt node resumed.
func (t *tracker) rule(pipeline, node string, d map[string]any) {
	key, _ := d["rule"].(string)
	action, _ := d["action"].(string)
	switch {
	case key == "" && action == "decision":
		t.hits[mark{owner: pipeline, kind: ItemInterrupt, name: node}]++
	case action == "decision":
		decisions, _ := d["decisions"].([]*runner.Decision)
		for _, dec := range decisions {
			t.hits[mark{owner: t.owners[key], kind: ItemDecision, name: key, decision: dec.Type}]++
		}
	case action == "expired":
		dec, _ := d["decision"].(string)
		t.hits[mark{owner: t.owners[key], kind: ItemDecision, name: key, decision: dec}]++
	default:
		t.owners[key] = ""
		if d["scope"] == "tenant" {
			t.owners[key] = t.tenant
		}
		t.hits[mark{owner: t.owners[key], kind: ItemRule, name: key}]++
	}
}
