package server

import (
	"encoding/json"
	"net/http"
	"sync"
)

// changeHub tells each tenant's listeners which of its threads changed:
// a run was admitted on it (a paused thread that resumes leaves the
// approvals), a run of it ended (it may have paused), or it was deleted.
// Only this server's own changes are told; a listener that must see other
// replicas' too reads the approvals again from time to time.
type changeHub struct {
	mu   sync.Mutex
	subs map[chan threadChange]string // listener → its tenant
}

// threadChange is one change of a thread: why, and the run's status when
// a run ended.
type threadChange struct {
	Thread string `json:"thread_id"`
	Reason string `json:"reason"` // run_admitted, run_ended, deleted
	Status string `json:"status,omitempty"`
}

// subscribe returns a channel of tenant's changes and the function that
// stops them.
func (h *changeHub) subscribe(tenant string) (<-chan threadChange, func()) {
	c := make(chan threadChange, 64)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[chan threadChange]string{}
	}
	h.subs[c] = tenant
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}
}

// publish tells tenant's listeners of ch; a listener too slow to take it
// misses it (the next change makes it read the approvals again anyway).
func (h *changeHub) publish(tenant string, ch threadChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, t := range h.subs {
		if t == tenant {
			select {
			case c <- ch:
			default:
			}
		}
	}
}

// approvalsStream streams, as server-sent events named "changed", the
// changes of the tenant's threads that may add or remove a pending
// approval — a run admitted (a resume or decision included), a run
// ended (with its status: interrupted is a new pause), a thread deleted —
// so an inbox reads its approvals again at once. A comment line keeps it
// alive; it ends when the client goes away or at the stream's maximum
// duration (reconnect: nothing is replayed, read the approvals first).
func (s *Server) approvalsStream(w http.ResponseWriter, r *http.Request) error {
	changes, stop := s.changes.subscribe(principal(r.Context()).Tenant)
	defer stop()
	sw := s.openStream(w)
	defer sw.close()
	sw.flush()
	for {
		select {
		case ch := <-changes:
			data, _ := json.Marshal(ch)
			writeEvent(w, "", "changed", data)
			if !sw.flush() {
				return nil
			}
		case <-sw.beat.C:
			if !sw.heartbeat() {
				return nil
			}
		case <-sw.expired:
			sw.expire("the stream reached its maximum duration; open it again")
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}
