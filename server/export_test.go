package server

// RoutePatterns lists the pattern of every route the router knows: the
// open ones and those behind a key (for the isolation walk).
func (s *Server) RoutePatterns() (public, api []string) {
	for _, ep := range s.table {
		if ep.open {
			public = append(public, ep.pattern)
		} else {
			api = append(api, ep.pattern)
		}
	}
	return public, api
}

// Notify enqueues event for the configured webhook, as a run's would be.
func (s *Server) Notify(tenant, event string, data map[string]any) { s.notify(tenant, event, data, "") }
