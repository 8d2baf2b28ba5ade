package queue

// OnMergedStatement calls f with the size of every statement the Complete
// merger sends (single-item fallbacks included). Set it before Start and
// before any call.
func OnMergedStatement(s *Server, f func(n int)) { s.completes.OnStatement(f) }

// AfterClaim runs f between a claim's statement and its response.
func AfterClaim(s *Server, f func()) { s.afterClaim = f }

// OnClaimAttempt runs f after each claim statement of a long-poll Claim. Set
// it before any call.
func OnClaimAttempt(s *Server, f func()) { s.claimAttempted = f }
