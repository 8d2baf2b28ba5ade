package node

import (
	"net/http"
	"net/http/pprof"
)

// PprofPath is where the opt-in profiler listener serves Go's profiles.
const PprofPath = "/debug/pprof/"

// maxPprofConns bounds the profiler listener: one operator at a time.
const maxPprofConns = 8

// routePprof opens SWITCHBOARD_PPROF_ADDR's listener with Go's profiler
// (bound now, so a busy port fails the boot; a.pprofHTTP), when it is set.
// It is for measuring a node (CPU profiles during a benchmark), so it is on
// no other listener and off by default: profiles name every function and
// a CPU profile costs CPU while it runs.
func (a *assembly) routePprof() error {
	if a.cfg.Pprof.Addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PprofPath, pprof.Index) // the named profiles too: heap, goroutine, …
	mux.HandleFunc("GET "+PprofPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc("GET "+PprofPath+"profile", pprof.Profile)
	mux.HandleFunc("GET "+PprofPath+"symbol", pprof.Symbol)
	mux.HandleFunc("GET "+PprofPath+"trace", pprof.Trace)
	srv, err := a.sideListener("pprof-http", a.cfg.Pprof.Addr, mux, maxPprofConns)
	a.pprofHTTP = srv
	return err
}

// PprofAddr is the bound address of the profiler listener
// (SWITCHBOARD_PPROF_ADDR); "" when it is off.
func (n *Node) PprofAddr() string {
	if n.a.pprofHTTP == nil {
		return ""
	}
	return n.a.pprofHTTP.Addr()
}
