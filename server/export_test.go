package server

// RoutePatterns lists the pattern of every route the router knows: the
// public ones and those behind a key (for the isolation walk).
func (s *Server) RoutePatterns() (public, api []string) {
	for _, rt := range s.publicRoutes() {
		public = append(public, rt.pattern)
	}
	for _, rt := range s.apiRoutes() {
		api = append(api, rt.pattern)
	}
	return public, api
}
