package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// resolveProfileFile returns a user's profile file at path as
// parseComponentProfile reads it: as written, or, when its
// ComponentProfile names a base, the base's two documents with this
// file's merged onto them. A run's profile then differs from the one it
// is compared with in what its file says, and nothing else.
//
// base is a built-in profile's name (tuned) or another profile file
// (lever-cm-qps-audit-gang.yaml), relative to this file's folder unless
// absolute, which may have a base of its own. The file's ComponentProfile
// document is merged onto the base's as a JSON merge patch (RFC 7386): a
// mapping merges key by key; anything else (a figure, a list such as an
// audit policy's rules) replaces the base's; null removes it. Its
// KubeSchedulerConfiguration document is merged onto the base's the same
// way, or left out to keep the base's as written. metadata.name is the
// file's own and differs from its base's; summary and note are inherited
// unless set.
//
// chain holds the files whose base is being read, to refuse a loop. It
// also returns the names down the chain, this file's first, none of
// which may repeat: a report quoting a profile's name must mean one.
func resolveProfileFile(path string, chain []string) ([]byte, []string, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	profile, scheduler, err := profileDocuments(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	name, base, err := profileNameAndBase(profile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if base == "" {
		return data, []string{name}, nil
	}
	fail := func(format string, args ...any) ([]byte, []string, error) {
		return nil, nil, fmt.Errorf("%s: base %q: %s", path, base, fmt.Sprintf(format, args...))
	}
	if name == "" {
		return fail("a profile with a base names itself: set metadata.name")
	}
	var baseData []byte
	baseNames := []string{base}
	if !isProfileFile(base) {
		if !slices.Contains(ComponentProfileNames(), base) {
			return fail("not a built-in profile (allowed are %s) nor a profile file (FILE.yaml or FILE.yml, relative to this file's folder)", strings.Join(ComponentProfileNames(), ", "))
		}
		baseData, err = builtinFiles.ReadFile("profiles/" + base + ".yaml")
	} else {
		basePath := base
		if !filepath.IsAbs(base) {
			basePath = filepath.Join(filepath.Dir(path), base)
		}
		here, _ := filepath.Abs(path)
		there, _ := filepath.Abs(basePath)
		chain = append(slices.Clip(chain), here)
		if slices.Contains(chain, there) {
			return fail("the bases go round in a loop: %s", strings.Join(append(chain, there), " → "))
		}
		if len(chain) > maxProfileBases {
			return fail("more than %d bases, one on another: %s → …", maxProfileBases, strings.Join(chain[:3], " → "))
		}
		baseData, baseNames, err = resolveProfileFile(basePath, chain)
		if err == nil {
			// A mistake in the base is reported as the base's.
			_, err = parseComponentProfile(basePath, baseData)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: base %q: %w", path, base, err)
	}
	baseProfile, baseScheduler, err := profileDocuments(baseData)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: base %q: %w", path, base, err)
	}
	switch slices.Index(baseNames, name) {
	case -1:
	case 0:
		return fail("metadata.name %q is its base's: give this profile a name of its own", name)
	default:
		return fail("metadata.name %q is that of a base further down (%s): give this profile a name of its own", name, strings.Join(baseNames, " → "))
	}
	merged, err := mergeDocument(baseProfile, profile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	delete(merged, "base")
	out, err := yaml.Marshal(merged)
	if err != nil {
		return nil, nil, err
	}
	sched := baseScheduler
	if scheduler != nil {
		m, err := mergeDocument(baseScheduler, scheduler)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: KubeSchedulerConfiguration: %w", path, err)
		}
		if sched, err = yaml.Marshal(m); err != nil {
			return nil, nil, err
		}
	}
	head := fmt.Sprintf("# %s, with its base %s merged in\n", path, base)
	return slices.Concat([]byte(head), out, []byte("---\n"), sched), append([]string{name}, baseNames...), nil
}

// maxProfileBases bounds a chain of bases, which a symbolic link can make
// endless without repeating a path.
const maxProfileBases = 16

// isProfileFile says whether a profile argument names a user's file
// (FILE.yaml, FILE.yml, or any path with a folder) rather than a built-in
// profile.
func isProfileFile(s string) bool {
	return strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") || strings.ContainsRune(s, filepath.Separator)
}

// ProfileByNameOrFile reads a profile argument: a built-in profile's name
// (or NAME+gang), or the path of a user's profile file.
func ProfileByNameOrFile(s string) (ComponentProfile, error) {
	if isProfileFile(s) {
		return LoadComponentProfile(s)
	}
	return LookupComponentProfile(s)
}

// profileNameAndBase reads a ComponentProfile document's metadata.name
// and base, before the whole document is checked.
func profileNameAndBase(doc []byte) (name, base string, err error) {
	var head struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Base string `json:"base"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return "", "", fmt.Errorf("%s: %s", ProfileKind, OneLine(err))
	}
	return head.Metadata.Name, head.Base, nil
}

// mergeDocument merges the YAML document patch onto base as a JSON merge
// patch (RFC 7386). A nil base is an empty one.
func mergeDocument(base, patch []byte) (map[string]any, error) {
	to, err := decodeObject(base)
	if err != nil {
		return nil, fmt.Errorf("its base's: %w", err)
	}
	from, err := decodeObject(patch)
	if err != nil {
		return nil, err
	}
	return mergePatch(to, from), nil
}

// decodeObject decodes a YAML mapping, refusing a key given twice; its
// numbers stay as written (an 8 GiB quota exact).
func decodeObject(doc []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, errors.New(OneLine(err))
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, errors.New(OneLine(err))
	}
	return m, nil
}

// mergePatch applies an RFC 7386 merge patch to a decoded JSON object.
func mergePatch(to, patch map[string]any) map[string]any {
	if to == nil {
		to = map[string]any{}
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(to, k)
		case map[string]any:
			tv, _ := to[k].(map[string]any)
			to[k] = mergePatch(tv, pv)
		default:
			to[k] = v
		}
	}
	return to
}
