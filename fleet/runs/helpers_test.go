package runs

import (
	"encoding/json"
	"testing"
)

// topLevel marshals res and checks that want's keys sit at the top level
// of its JSON form with those values; it returns the JSON.
func topLevel(t *testing.T, res any, want map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s = %v, want %v (in %s)", key, got[key], w, data)
		}
	}
	return data
}

// errorText is err's text, or "" for none.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
