package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// CPUProfile is one component's CPU profile over a capture: pprof's
// gzipped protocol buffer, or why there is none.
type CPUProfile struct {
	Component string
	Data      []byte
	Err       error
}

// CaptureCPUProfiles asks every component of fleet name that serves HTTP
// for a CPU profile over d, all at once, through Go's
// /debug/pprof/profile?seconds=…: kube-apiserver, kube-scheduler and
// kube-controller-manager (profiling is on by default), etcd (only when
// started with --enable-pprof), the kwok controller and Prometheus. A
// component that serves no profile is returned with its error; the
// others are unaffected.
func CaptureCPUProfiles(ctx context.Context, name string, d time.Duration) ([]CPUProfile, error) {
	if d < time.Second {
		return nil, fmt.Errorf("profile duration %s is out of range: at least 1s", d)
	}
	served, err := servingComponents(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]CPUProfile, len(served))
	var wg sync.WaitGroup
	for i, c := range served {
		out[i].Component = c.Name
		wg.Go(func() {
			out[i].Data, out[i].Err = fetchProfile(ctx, c, d)
			if errors.Is(out[i].Err, errNoProfile) && c.Name == "kwok-controller" {
				out[i].Err = fmt.Errorf("kwok serves no CPU profile (its /debug/pprof/ has only the named profiles such as heap); `ghostfleet bench` measures its CPU from /proc")
			}
		})
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out, nil
}

var errNoProfile = errors.New("404: no CPU profile served here")

func fetchProfile(ctx context.Context, c servingComponent, d time.Duration) ([]byte, error) {
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: c.TLS, Proxy: nil},
		Timeout:   d + 30*time.Second,
	}
	url := c.URL(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", url, errNoProfile)
	default:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// EtcdTrace asks fleet name's etcd for a Go execution trace of d (its
// /debug/pprof/trace, served with --enable-pprof, as GhostFleet starts
// it) and returns the trace as it streams; the caller closes it.
func EtcdTrace(ctx context.Context, name string, d time.Duration) (io.ReadCloser, error) {
	base, err := etcdEndpoint(ctx, name)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s/debug/pprof/trace?seconds=%d", base, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// One connection, closed with the body.
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("GET %s: 404: etcd serves no trace (it runs without --enable-pprof: a fleet made before GhostFleet set it: `ghostfleet clean`, then `ghostfleet up`)", url)
	}
	// pprof says why in the body (a trace already running, say).
	why, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(why)))
}
