package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// IngestUsage is the command line of `bench ingest`.
const IngestUsage = `switchboard bench ingest --requests N --concurrency C [--url http://127.0.0.1:8080] [--body-bytes 256] [--queue bench-ingest] [--cacert ca.pem]`

// benchIngestConfig is the parsed command line of `bench ingest`.
type benchIngestConfig struct {
	url         string
	token       string
	queue       string
	requests    int
	concurrency int
	bodyBytes   int
	tls         *tls.Config // for an https:// URL; nil: the system roots
}

func parseBenchIngest(args []string, lookup func(string) (string, bool)) (benchIngestConfig, error) {
	cfg := benchIngestConfig{}
	fs := flag.NewFlagSet("bench ingest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8080", "HTTP edge of a switchboard node")
	fs.StringVar(&cfg.queue, "queue", "bench-ingest", "queue the endpoint's todos go to")
	fs.IntVar(&cfg.requests, "requests", 0, "webhook deliveries to send")
	fs.IntVar(&cfg.concurrency, "concurrency", 0, "deliveries in flight at once")
	fs.IntVar(&cfg.bodyBytes, "body-bytes", 256, "size of each JSON body, 32–1048576")
	var tf tlsFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, flagErr(fs, IngestUsage, err)
	}
	switch {
	case fs.NArg() != 0:
		return cfg, usageErr("bench ingest: unexpected argument %q", fs.Arg(0))
	case cfg.requests < 1:
		return cfg, usageErr("bench ingest: --requests must be at least 1")
	case cfg.concurrency < 1 || cfg.concurrency > 10000:
		return cfg, usageErr("bench ingest: --concurrency must be 1–10000")
	case cfg.bodyBytes < 32 || cfg.bodyBytes > 1<<20:
		return cfg, usageErr("bench ingest: --body-bytes must be 32–1048576")
	case !queueName.MatchString(cfg.queue):
		return cfg, usageErr("bench ingest: --queue %q is not a queue name", cfg.queue)
	case !strings.HasPrefix(cfg.url, "http://") && !strings.HasPrefix(cfg.url, "https://"):
		return cfg, usageErr("bench ingest: --url must be http(s)://host:port")
	}
	tok, ok := lookup(EnvToken)
	if !ok || tok == "" {
		return cfg, usageErr("bench ingest: set %s to a token with the admin scope (it creates the endpoint)", EnvToken)
	}
	cfg.token = tok
	cfg.url = strings.TrimRight(cfg.url, "/")
	https := strings.HasPrefix(cfg.url, "https://")
	if err := tf.checkScheme("bench ingest", cfg.url, https); err != nil {
		return cfg, err
	}
	tf.on = https
	var err error
	cfg.tls, err = tf.config("bench ingest")
	return cfg, err
}

// Ingest runs `switchboard bench ingest`: it creates a Standard
// Webhooks endpoint through the admin API, sends --requests signed
// deliveries over HTTP with --concurrency in flight (each a distinct
// delivery, so each stores an event and a todo), and prints one line:
//
//	RESULT accepted_per_s=<n> p50_ms=<n> p99_ms=<n>
//
// Any answer but 200 counts as a failure and fails the run.
func Ingest(ctx context.Context, args []string, stdout io.Writer, lookup func(string) (string, bool)) error {
	cfg, err := parseBenchIngest(args, lookup)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: cfg.concurrency, MaxConnsPerHost: cfg.concurrency,
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSClientConfig: cfg.tls,
	}, Timeout: 30 * time.Second}
	slug, secret, err := createBenchEndpoint(ctx, client, cfg)
	if err != nil {
		return err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("bench ingest: the endpoint's secret is not whsec_<base64>: %w", err)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	pad := strings.Repeat("x", max(0, cfg.bodyBytes-64))
	var next, failed atomic.Int64
	lat := make([][]time.Duration, cfg.concurrency)
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.concurrency {
		c, err := newHookConn(cfg.url+"/hooks/"+slug, key, cfg.tls)
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer c.close()
			var body []byte
			for {
				i := next.Add(1)
				if i > int64(cfg.requests) || ctx.Err() != nil {
					return
				}
				body = fmt.Appendf(body[:0], `{"run":%q,"n":%d,"pad":%q}`, run, i, pad)
				t0 := time.Now()
				if err := c.deliver(ctx, run+"-"+strconv.FormatInt(i, 10), body); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("bench ingest: %d of %d deliveries failed; first: %v", n, cfg.requests, firstErr.Load())
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	fmt.Fprintf(os.Stderr, "bench: %d deliveries of %d bytes with %d in flight in %s\n", cfg.requests, cfg.bodyBytes, cfg.concurrency, el.Round(time.Millisecond))
	_, err = fmt.Fprintf(stdout, "RESULT accepted_per_s=%.0f p50_ms=%.3f p99_ms=%.3f\n",
		float64(cfg.requests)/el.Seconds(), ms(percentile(all, 50)), ms(percentile(all, 99)))
	return err
}

// createBenchEndpoint makes the endpoint deliveries go to and returns its
// slug and its (once-shown) secret.
func createBenchEndpoint(ctx context.Context, client *http.Client, cfg benchIngestConfig) (slug, secret string, err error) {
	reqBody := fmt.Sprintf(`{"name":"bench ingest","queue":%q,"verification":"VERIFICATION_SCHEME_STANDARD_WEBHOOKS"}`, cfg.queue)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.url+"/api/admin/endpoints", strings.NewReader(reqBody))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("bench ingest: create endpoint: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", "", fmt.Errorf("bench ingest: create endpoint: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("bench ingest: create endpoint: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var out struct {
		Endpoint struct {
			Slug string `json:"slug"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Endpoint.Slug == "" || out.Secret == "" {
		return "", "", errors.New("bench ingest: create endpoint: the answer has no slug or secret")
	}
	return out.Endpoint.Slug, out.Secret, nil
}
