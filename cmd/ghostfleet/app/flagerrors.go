package app

import (
	"fmt"
	"regexp"
	"strings"
)

// pflag's "invalid argument" errors, e.g. `invalid argument "abc" for
// "-n, --nodes" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var invalidFlag = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)

// flagValueError says what is wrong with a flag's value in the words the
// run API's checks use (the value, then what is allowed) instead of Go's
// parser's; other errors are returned as they are.
func flagValueError(err error) error {
	m := invalidFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, flag, why := m[1], m[2], m[3]
	switch {
	case strings.Contains(why, "value out of range"):
		return fmt.Errorf("%s %q is out of range: it is too large a number", flag, value)
	case strings.HasPrefix(why, "strconv.ParseInt"), strings.HasPrefix(why, "strconv.ParseUint"):
		return fmt.Errorf("%s %q is not a whole number", flag, value)
	case strings.HasPrefix(why, "strconv.ParseFloat"):
		return fmt.Errorf("%s %q is not a number", flag, value)
	case strings.HasPrefix(why, "time: "):
		return fmt.Errorf("%s %q is not a duration: use Go form (90s, 10m, 1h30m)", flag, value)
	case strings.HasPrefix(why, "strconv.ParseBool"):
		return fmt.Errorf("%s %q is not true or false", flag, value)
	}
	return fmt.Errorf("%s %q: %s", flag, value, why)
}
