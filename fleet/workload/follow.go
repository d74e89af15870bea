package workload

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// follow watches from resource version rv through watchFn (re-opening
// the watch as client-go's RetryWatcher does) and hands every event to
// handle, in order, until ctx ends or stop is called. stop returns once
// handle has been called for the last time. what names the resources in
// errors ("pods").
func follow(ctx context.Context, what, rv string, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), handle func(watch.Event)) (stop func(), err error) {
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.AllowWatchBookmarks = true
			return watchFn(ctx, o)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", what, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				handle(ev)
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}
