package httpserver

import (
	"bytes"
	"log"

	"go.uber.org/zap"
)

// handshakeLog is the http.Server's error log under TLS: failed handshakes
// (load balancers' TCP checks, scanners, plain HTTP sent to the port) are
// routine on an exposed port and go to debug; anything else the server
// reports is a warning.
func handshakeLog(l *zap.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ log *zap.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSpace(p))
	if bytes.Contains(p, []byte("TLS handshake error")) {
		w.log.Debug(msg)
	} else {
		w.log.Warn(msg)
	}
	return len(p), nil
}
