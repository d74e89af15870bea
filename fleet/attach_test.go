package fleet

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// TestShardSelector: every GhostFleet node is managed by exactly one
// shard, whatever the count; one shard is the plain node selector.
func TestShardSelector(t *testing.T) {
	if got := ShardSelector(0, 1); got != KwokNodeSelector {
		t.Errorf("one shard: %q, want %q", got, KwokNodeSelector)
	}
	for _, k := range []int{2, 3, 16} {
		sels := make([]labels.Selector, k)
		for i := range k {
			s, err := labels.Parse(ShardSelector(i, k))
			if err != nil {
				t.Fatalf("shard %d/%d: %v", i, k, err)
			}
			sels[i] = s
		}
		for _, n := range []int{0, 31, 32, 95, 1000, MaxNodes - 1} {
			node := NewNode(GPUProfiles[0], n)
			owners := 0
			for _, s := range sels {
				if s.Matches(labels.Set(node.Labels)) {
					owners++
				}
			}
			if owners != 1 {
				t.Errorf("%d shards: node %d is managed by %d shards, want 1", k, n, owners)
			}
		}
	}
}
