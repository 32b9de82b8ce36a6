package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Audit ledger events: what happened to a gate.
const (
	AuditOpened    = "opened"
	AuditVoted     = "voted" // an approval toward a quorum not yet reached
	AuditDecided   = "decided"
	AuditExpired   = "expired"
	AuditEscalated = "escalated"
)

// AuditEntry is what the audit ledger says of one gate event: when, whose
// (tenant, thread, run), under which rule and definitions, on which call
// (its tool and the SHA-256 digests of its arguments, of edited ones and
// of the result under review), what was decided and by whom, and how far
// the gate's quorum is ("1/2": one approval of two).
type AuditEntry struct {
	Time       time.Time `json:"time"`
	Event      string    `json:"event"`
	Tenant     string    `json:"tenant,omitempty"`
	Thread     string    `json:"thread"`
	Run        string    `json:"run,omitempty"`
	Rule       string    `json:"rule"`
	Defs       string    `json:"defs_hash"`
	Call       string    `json:"call"`
	Tool       string    `json:"tool"`
	Args       string    `json:"args_digest"`
	EditedArgs string    `json:"edited_args_digest,omitempty"`
	Result     string    `json:"result_digest,omitempty"`
	Decision   string    `json:"decision,omitempty"`
	Principal  string    `json:"principal,omitempty"`
	Quorum     string    `json:"quorum,omitempty"`
}

// AuditRecord is one record of a tenant's audit ledger: an append-only
// chain in which record Seq (1, 2, …) holds Record, an AuditEntry as
// JSON, and Hash = AuditHash(PrevHash, Seq, Record), PrevHash being the
// Hash of record Seq-1 ("" for the first). A record changed, or one
// deleted, breaks the chain where it stood (AuditVerifier). Time is the
// entry's, for queries; the chain covers it inside Record.
type AuditRecord struct {
	Tenant   string          `json:"tenant"`
	Seq      int64           `json:"seq"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
	Time     time.Time       `json:"-"`
	Record   json.RawMessage `json:"record"`
}

// NewAudit is the record of e, to append (Seq and hashes unset).
func NewAudit(e AuditEntry) *AuditRecord {
	e.Time = e.Time.UTC()
	b, _ := json.Marshal(e) // strings and a time
	return &AuditRecord{Tenant: e.Tenant, Time: e.Time, Record: b}
}

// Entry decodes the record's entry.
func (r *AuditRecord) Entry() (AuditEntry, error) {
	var e AuditEntry
	err := json.Unmarshal(r.Record, &e)
	return e, err
}

// AuditHash is the hash of ledger record seq holding record after the
// record whose hash is prev: hex SHA-256 of "prev|seq|record".
func AuditHash(prev string, seq int64, record []byte) string {
	h := sha256.New()
	h.Write([]byte(prev + "|" + strconv.FormatInt(seq, 10) + "|"))
	h.Write(record)
	return hex.EncodeToString(h.Sum(nil))
}

// Chain sets r's Seq, PrevHash and Hash to follow the record numbered
// seq with hash prev.
func (r *AuditRecord) Chain(seq int64, prev string) {
	r.Seq, r.PrevHash = seq+1, prev
	r.Hash = AuditHash(prev, r.Seq, r.Record)
}

// CheckAudit checks that recs, records to append in one write, are all
// of tenant's chain.
func CheckAudit(tenant string, recs []*AuditRecord) error {
	for _, r := range recs {
		if r.Tenant != tenant {
			return fmt.Errorf("audit record of tenant %q appended with tenant %q's", r.Tenant, tenant)
		}
	}
	return nil
}

// AuditQuery selects ledger records: a tenant's (AllTenants: every
// tenant's), at or after Since, after the cursor After, at most Limit (<=
// 0: all), in the order of tenant, then Seq.
type AuditQuery struct {
	Tenant     string
	AllTenants bool
	Since      time.Time
	After      *AuditCursor
	Limit      int
}

// SQL is q as a select of the audit table's columns tenant, seq,
// prev_hash, hash, time (Unix nanoseconds) and record, for the SQL
// backends; arg adds an argument and returns its placeholder.
func (q *AuditQuery) SQL(arg func(any) string) string {
	sql := "SELECT tenant, seq, prev_hash, hash, time, record FROM audit WHERE true"
	if !q.AllTenants {
		sql += " AND tenant = " + arg(q.Tenant)
	}
	if !q.Since.IsZero() {
		sql += " AND time >= " + arg(q.Since.UnixNano())
	}
	if q.After != nil {
		sql += fmt.Sprintf(" AND (tenant, seq) > (%s, %s)", arg(q.After.Tenant), arg(q.After.Seq))
	}
	sql += " ORDER BY tenant, seq"
	if q.Limit > 0 {
		sql += " LIMIT " + arg(q.Limit)
	}
	return sql
}

// AuditCursor is a place in a list of ledger records: a record's tenant
// and Seq.
type AuditCursor struct {
	Tenant string
	Seq    int64
}

// AuditStore keeps the audit ledger. Its records are appended with the
// checkpoints that open, decide or expire gates (Checkpoint.Audit) or by
// AppendAudit, and never changed or pruned: deleting a thread or pruning
// its checkpoints leaves them. Appends to one tenant's chain are
// serialized, across processes too, so each tenant has one chain.
// Implementations are safe for concurrent use.
type AuditStore interface {
	// AppendAudit appends recs, in order and in one write, to their
	// tenant's chain: they are all one tenant's (CheckAudit).
	AppendAudit(ctx context.Context, recs ...*AuditRecord) error
	// Audit lists the records q selects.
	Audit(ctx context.Context, q AuditQuery) ([]*AuditRecord, error)
}

// Selects reports whether q selects r, limit aside.
func (q *AuditQuery) Selects(r *AuditRecord) bool {
	switch {
	case !q.AllTenants && r.Tenant != q.Tenant,
		!q.Since.IsZero() && r.Time.Before(q.Since),
		q.After != nil && cmp.Or(cmp.Compare(r.Tenant, q.After.Tenant), cmp.Compare(r.Seq, q.After.Seq)) <= 0:
		return false
	}
	return true
}

// AuditBreak is where a ledger's chain breaks: record Seq of Tenant was
// changed, or deleted (Reason says which).
type AuditBreak struct {
	Tenant string
	Seq    int64
	Reason string
}

func (b *AuditBreak) Error() string {
	return fmt.Sprintf("audit ledger of tenant %q: record %d %s", b.Tenant, b.Seq, b.Reason)
}

// AuditVerifier checks ledger records fed to it in the order of tenant,
// then Seq, each tenant's from its first: each record's hash against its
// contents, and its link to the record before it.
type AuditVerifier struct {
	tenant string
	seq    int64
	hash   string
	n      int
}

// Check checks the next record; an error is an *AuditBreak naming the
// first record that was changed or deleted.
func (v *AuditVerifier) Check(r *AuditRecord) error {
	if v.n == 0 || r.Tenant != v.tenant {
		v.tenant, v.seq, v.hash = r.Tenant, 0, ""
	}
	v.n++
	switch {
	case r.Seq <= v.seq:
		return &AuditBreak{r.Tenant, r.Seq, "comes again, out of order"}
	case r.Seq > v.seq+1:
		return &AuditBreak{r.Tenant, v.seq + 1, "is missing: deleted"}
	case r.PrevHash != v.hash:
		return &AuditBreak{r.Tenant, r.Seq, fmt.Sprintf("does not follow record %d: changed (its prev_hash is not that record's hash)", v.seq)}
	case AuditHash(r.PrevHash, r.Seq, r.Record) != r.Hash:
		return &AuditBreak{r.Tenant, r.Seq, "was changed: its hash does not match its contents"}
	}
	v.seq, v.hash = r.Seq, r.Hash
	return nil
}

// Verified is how many records the verifier checked.
func (v *AuditVerifier) Verified() int { return v.n }

// memAudit is the memory store's ledger, under its mutex: each tenant's
// chain.
type memAudit struct {
	audit map[string][]*AuditRecord
}

// appendAudit chains and appends copies of recs; the memory's mutex is
// held.
func (m *memAudit) appendAudit(recs []*AuditRecord) {
	for _, r := range recs {
		c := cloneAudit(r)
		chain := m.audit[c.Tenant]
		var seq int64
		var prev string
		if n := len(chain); n > 0 {
			seq, prev = chain[n-1].Seq, chain[n-1].Hash
		}
		c.Chain(seq, prev)
		m.audit[c.Tenant] = append(chain, c)
	}
}

func cloneAudit(r *AuditRecord) *AuditRecord {
	c := *r
	c.Time, c.Record = r.Time.UTC(), slices.Clone(r.Record)
	return &c
}

func (m *memory) AppendAudit(_ context.Context, recs ...*AuditRecord) error {
	if len(recs) > 0 {
		if err := CheckAudit(recs[0].Tenant, recs); err != nil {
			return fmt.Errorf("store: audit: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.appendAudit(recs)
	return nil
}

func (m *memory) Audit(_ context.Context, q AuditQuery) ([]*AuditRecord, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tenants := make([]string, 0, len(m.audit))
	for t := range m.audit {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	var out []*AuditRecord
	for _, t := range tenants {
		for _, r := range m.audit[t] {
			if q.Limit > 0 && len(out) == q.Limit {
				return out, nil
			}
			if q.Selects(r) {
				out = append(out, cloneAudit(r))
			}
		}
	}
	return out, nil
}

// auditPage is how many records ExportAudit reads at a time.
const auditPage = 1000

// ExportAudit writes the records q selects to w as JSON Lines, one
// AuditRecord a line, and returns how many it wrote. With verify it
// checks the chains of the tenants q selects whole (Since limits what is
// written, not what is checked) and returns an *AuditBreak at the first
// record changed or deleted, after writing those before it.
func ExportAudit(ctx context.Context, a AuditStore, q AuditQuery, verify bool, w io.Writer) (int, error) {
	since := q.Since
	if verify {
		q.Since = time.Time{}
	}
	enc := json.NewEncoder(w)
	var v AuditVerifier
	n := 0
	for {
		page := q
		page.Limit = auditPage
		recs, err := a.Audit(ctx, page)
		if err != nil {
			return n, err
		}
		for _, r := range recs {
			if verify {
				if err := v.Check(r); err != nil {
					return n, err
				}
			}
			if r.Time.Before(since) {
				continue
			}
			if err := enc.Encode(r); err != nil {
				return n, err
			}
			n++
		}
		if len(recs) < auditPage {
			return n, nil
		}
		last := recs[len(recs)-1]
		q.After = &AuditCursor{Tenant: last.Tenant, Seq: last.Seq}
	}
}
