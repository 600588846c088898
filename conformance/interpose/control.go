package interpose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The control endpoint is HTTP with JSON bodies, on a unix socket or
// 127.0.0.1:
//
//	GET    /v1/info                 Info
//	GET    /v1/rules                the armed rules ([]ArmedRule)
//	POST   /v1/rules                arm a Rule (body) → {"id": N}
//	DELETE /v1/rules                disarm all → {"cleared": N}
//	GET    /v1/records              records (?method=&source=&claim=<uid>&after=<seq>)
//	POST   /v1/driver/prepare       call the driver directly ({"claims": [ClaimRef]}) → Record
//	POST   /v1/driver/unprepare     the same for NodeUnprepareResources
//
// An error is {"error": "..."} with status 400 (bad request) or 405.

// ClaimRef names a claim as the kubelet does in its requests.
type ClaimRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

type claimsBody struct {
	Claims []ClaimRef `json:"claims"`
}

func (ip *Interposer) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, ip.Info()) })
	mux.HandleFunc("GET /v1/rules", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, ip.Rules()) })
	mux.HandleFunc("POST /v1/rules", func(w http.ResponseWriter, r *http.Request) {
		var rule Rule
		if err := decodeStrict(r.Body, &rule); err != nil {
			replyError(w, http.StatusBadRequest, fmt.Errorf("decode rule: %w", err))
			return
		}
		id, err := ip.AddRule(rule)
		if err != nil {
			replyError(w, http.StatusBadRequest, err)
			return
		}
		reply(w, http.StatusOK, map[string]int{"id": id})
	})
	mux.HandleFunc("DELETE /v1/rules", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]int{"cleared": ip.ClearRules()})
	})
	mux.HandleFunc("GET /v1/records", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f := Filter{Method: q.Get("method"), Source: q.Get("source"), ClaimUID: q.Get("claim")}
		if after := q.Get("after"); after != "" {
			n, err := strconv.ParseInt(after, 10, 64)
			if err != nil {
				replyError(w, http.StatusBadRequest, fmt.Errorf("parameter after %q: want a record number", after))
				return
			}
			f.After = n
		}
		reply(w, http.StatusOK, ip.Records(f))
	})
	direct := func(call func(context.Context, []ClaimRef) Record) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var body claimsBody
			if err := decodeStrict(r.Body, &body); err != nil {
				replyError(w, http.StatusBadRequest, fmt.Errorf("decode claims: %w", err))
				return
			}
			if len(body.Claims) == 0 {
				replyError(w, http.StatusBadRequest, errors.New("claims: want at least one"))
				return
			}
			reply(w, http.StatusOK, call(r.Context(), body.Claims))
		}
	}
	mux.HandleFunc("POST /v1/driver/prepare", direct(func(ctx context.Context, c []ClaimRef) Record { return ip.Prepare(ctx, claimsOf(c)) }))
	mux.HandleFunc("POST /v1/driver/unprepare", direct(func(ctx context.Context, c []ClaimRef) Record { return ip.Unprepare(ctx, claimsOf(c)) }))
	return mux
}

func decodeStrict(r io.Reader, into any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func replyError(w http.ResponseWriter, code int, err error) {
	reply(w, code, map[string]string{"error": err.Error()})
}

// Client talks to an interposer's control endpoint.
type Client struct {
	addr string
	base string
	http *http.Client
}

// NewClient returns a client of the control endpoint at addr (a unix
// socket path or 127.0.0.1:PORT).
func NewClient(addr string) (*Client, error) {
	network, err := controlNetwork(addr)
	if err != nil {
		return nil, fmt.Errorf("interposer control address %q: %w", addr, err)
	}
	transport := &http.Transport{}
	base := "http://" + addr
	if network == "unix" {
		base = "http://interposer"
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}
	}
	return &Client{addr: addr, base: base, http: &http.Client{Transport: transport, Timeout: 2 * time.Minute}}, nil
}

// Info asks what the interposer serves.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var out Info
	return out, c.do(ctx, http.MethodGet, "/v1/info", nil, &out)
}

// AddRule arms a rule and returns its ID.
func (c *Client) AddRule(ctx context.Context, r Rule) (int, error) {
	var out struct{ ID int }
	return out.ID, c.do(ctx, http.MethodPost, "/v1/rules", r, &out)
}

// ClearRules disarms every rule.
func (c *Client) ClearRules(ctx context.Context) (int, error) {
	var out struct{ Cleared int }
	return out.Cleared, c.do(ctx, http.MethodDelete, "/v1/rules", nil, &out)
}

// Rules lists the armed rules.
func (c *Client) Rules(ctx context.Context) ([]ArmedRule, error) {
	var out []ArmedRule
	return out, c.do(ctx, http.MethodGet, "/v1/rules", nil, &out)
}

// Records returns the records f selects.
func (c *Client) Records(ctx context.Context, f Filter) ([]Record, error) {
	q := url.Values{}
	for k, v := range map[string]string{"method": f.Method, "source": f.Source, "claim": f.ClaimUID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	var out []Record
	return out, c.do(ctx, http.MethodGet, "/v1/records?"+q.Encode(), nil, &out)
}

// Prepare has the interposer call the driver's NodePrepareResources
// directly with claims.
func (c *Client) Prepare(ctx context.Context, claims ...ClaimRef) (Record, error) {
	var out Record
	return out, c.do(ctx, http.MethodPost, "/v1/driver/prepare", claimsBody{claims}, &out)
}

// Unprepare has the interposer call the driver's NodeUnprepareResources
// directly.
func (c *Client) Unprepare(ctx context.Context, claims ...ClaimRef) (Record, error) {
	var out Record
	return out, c.do(ctx, http.MethodPost, "/v1/driver/unprepare", claimsBody{claims}, &out)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("interposer %s: %s %s: %w", c.addr, method, path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("interposer %s: %s %s: %w", c.addr, method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("interposer %s: read %s %s: %w", c.addr, method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("interposer %s: %s %s: %s", c.addr, method, path, e.Error)
		}
		return fmt.Errorf("interposer %s: %s %s: %s", c.addr, method, path, resp.Status)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("interposer %s: decode %s %s: %w", c.addr, method, path, err)
	}
	return nil
}
