// Package redisurl holds the URL forms of ENCORE_REDIS_URL and opens the
// client each names: one Redis server, a Redis Cluster, or a master found
// through Redis Sentinel. Every Redis user in Encore takes the
// redis.UniversalClient this returns, so none of them knows which it is.
//
// The forms (rediss instead of redis for TLS in each):
//
//	redis://[user:password@]host:port[/db][?option=value...]
//	    one server (go-redis's redis.ParseURL).
//	redis+cluster://[user:password@]host:port[?addr=host2:port2&addr=...][&option=value...]
//	    a Redis Cluster: the host and every addr are seed nodes, the rest is
//	    discovered. There is no /db: a cluster has only database 0.
//	redis+sentinel://[user:password@]host:port[/db]?master_name=NAME[&addr=host2:port2...]
//	    [&sentinel_username=U&sentinel_password=P][&option=value...]
//	    the master NAME as Sentinel reports it: the host and every addr are
//	    sentinels; user and password authenticate to the master (and its
//	    replicas), sentinel_username and sentinel_password to the sentinels.
//
// Options are go-redis's, in snake case (dial_timeout=2s, pool_size=50, ...).
package redisurl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is what a URL names.
type Kind string

// Kinds of Redis deployment.
const (
	Single   Kind = "single"
	Cluster  Kind = "cluster"
	Sentinel Kind = "sentinel"
)

// Target is a parsed ENCORE_REDIS_URL.
type Target struct {
	Kind     Kind
	single   *redis.Options
	cluster  *redis.ClusterOptions
	sentinel *redis.FailoverOptions
}

// Forms lists the accepted schemes, for error messages and documentation.
const Forms = "redis://host:port[/db], redis+cluster://host:port[?addr=host2:port2...], " +
	"redis+sentinel://host:port?master_name=NAME[&addr=host2:port2...] (rediss for TLS)"

// Parse reads one of the forms of the package documentation.
func Parse(raw string) (Target, error) {
	if raw == "" {
		return Target{}, errors.New("empty Redis URL; the forms are " + Forms)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included: say less.
		return Target{}, errors.New("not a URL; the forms are " + Forms)
	}
	base, kind, found := strings.Cut(u.Scheme, "+")
	if base != "redis" && base != "rediss" || found && kind != string(Cluster) && kind != string(Sentinel) {
		return Target{}, fmt.Errorf("unknown scheme %q; the forms are %s", u.Scheme, Forms)
	}
	if u.Host == "" {
		return Target{}, fmt.Errorf("%s:// names no host", u.Scheme)
	}
	switch Kind(kind) {
	case Cluster:
		if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
			return Target{}, fmt.Errorf("a Redis Cluster has only database 0: remove /%s from the URL", p)
		}
		v := *u
		v.Scheme, v.Path = base, ""
		o, err := redis.ParseClusterURL(v.String())
		if err != nil {
			return Target{}, fmt.Errorf("cluster URL: %w", err)
		}
		return Target{Kind: Cluster, cluster: o}, nil
	case Sentinel:
		return parseSentinel(u, base)
	default:
		o, err := redis.ParseURL(raw)
		if err != nil {
			return Target{}, err
		}
		return Target{Kind: Single, single: o}, nil
	}
}

// parseSentinel swaps the credentials into go-redis's own form, where the
// URL's user info is the sentinels' and the master's are query options:
// Encore's data lives on the master, so its credentials take the usual place.
func parseSentinel(u *url.URL, base string) (Target, error) {
	q := u.Query()
	if q.Get("master_name") == "" {
		return Target{}, errors.New("a Sentinel URL needs the master's name: add ?master_name=NAME (as in the sentinels' configuration)")
	}
	for _, k := range []string{"username", "password"} {
		if q.Has(k) {
			return Target{}, fmt.Errorf("a Sentinel URL takes the master's credentials as user:password@, not ?%s=", k)
		}
	}
	v := *u
	v.Scheme, v.User = base, nil
	if u.User != nil {
		if name := u.User.Username(); name != "" {
			q.Set("username", name)
		}
		if pw, ok := u.User.Password(); ok {
			q.Set("password", pw)
		}
	}
	if su, sp := q.Get("sentinel_username"), q.Get("sentinel_password"); su != "" || sp != "" {
		v.User = url.UserPassword(su, sp)
		if sp == "" {
			v.User = url.User(su)
		}
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	v.RawQuery = q.Encode()
	o, err := redis.ParseFailoverURL(v.String())
	if err != nil {
		return Target{}, fmt.Errorf("sentinel URL: %w", err)
	}
	return Target{Kind: Sentinel, sentinel: o}, nil
}

// Addrs are the addresses the URL names: the server, the cluster's seed
// nodes or the sentinels.
func (t Target) Addrs() []string {
	switch t.Kind {
	case Cluster:
		return t.cluster.Addrs
	case Sentinel:
		return t.sentinel.SentinelAddrs
	case Single:
		return []string{t.single.Addr}
	}
	return nil
}

// MasterName is the Sentinel master's name (empty for the other kinds).
func (t Target) MasterName() string {
	if t.Kind == Sentinel {
		return t.sentinel.MasterName
	}
	return ""
}

// DB is the database number (always 0 on a cluster).
func (t Target) DB() int {
	switch t.Kind {
	case Single:
		return t.single.DB
	case Sentinel:
		return t.sentinel.DB
	}
	return 0
}

// Timeouts override the URL's (zero keeps it).
type Timeouts struct {
	Dial, Read, Write time.Duration
	// DialAttempts is how many times one connection is dialled before a
	// command fails (go-redis's DialerRetries; its default of 5, with a
	// 100 ms pause between, holds every call to a dead server for half a
	// second). Zero keeps the URL's or go-redis's.
	DialAttempts int
}

// applyTo overrides the options' timeouts and dial attempts (each client
// kind has its own options type, with the same fields) with those set.
func (to Timeouts) applyTo(dial, read, write *time.Duration, dialerRetries *int) {
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	set(dial, to.Dial)
	set(read, to.Read)
	set(write, to.Write)
	if to.DialAttempts > 0 {
		*dialerRetries = to.DialAttempts
	}
}

// NewClient opens the client the target names with the timeouts applied.
func (t Target) NewClient(to Timeouts) redis.UniversalClient {
	switch t.Kind {
	case Cluster:
		o := *t.cluster
		to.applyTo(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.DialerRetries)
		// The state is also reloaded after a network error (below); the
		// interval only bounds how stale a quiet client's view may grow.
		if o.ClusterStateReloadInterval == 0 {
			o.ClusterStateReloadInterval = 10 * time.Second
		}
		c := redis.NewClusterClient(&o)
		c.AddHook(reloadOnNetError{c})
		return c
	case Sentinel:
		o := *t.sentinel
		to.applyTo(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.DialerRetries)
		return redis.NewFailoverClient(&o)
	default:
		o := *t.single
		to.applyTo(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.DialerRetries)
		return redis.NewClient(&o)
	}
}

// Open parses raw and opens its client.
func Open(raw string, to Timeouts) (redis.UniversalClient, error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return t.NewClient(to), nil
}

// reloadOnNetError asks a cluster client to read the slot map again when a
// node does not answer. go-redis reloads it on MOVED and otherwise only
// every ClusterStateReloadInterval, but a master that died answers nothing,
// let alone MOVED: after its replica took over, the client would keep
// dialling the dead address for the whole interval, and the waiting room,
// which fails closed, would admit nobody from that event meanwhile. The
// reload itself is asynchronous and coalesced by go-redis.
type reloadOnNetError struct{ c *redis.ClusterClient }

func (h reloadOnNetError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnNetError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnNetError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnNetError) check(ctx context.Context, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
		h.c.ReloadState(ctx)
	}
}
