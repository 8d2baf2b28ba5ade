package ingest

// OnBatchStatement sets a hook told each group-commit statement's size.
func (s *Server) OnBatchStatement(f func(n int)) { s.batcher.onStatement = f }
