package requests

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// etcdNoSpace is how etcd's ErrNoSpace reads, in the apiserver's 500
// answer (its Status message, in JSON or protobuf alike).
const etcdNoSpace = "mvcc: database space exceeded"

// IsEtcdNoSpace reports whether an error message is etcd's NOSPACE.
func IsEtcdNoSpace(msg string) bool { return strings.Contains(msg, etcdNoSpace) }

// peekLimit bounds how much of a 5xx answer is read to find its cause:
// the apiserver's Status is a few hundred bytes.
const peekLimit = 16 << 10

// peekNoSpace reads the start of a 5xx answer's body to tell etcd's
// NOSPACE from other server errors, and puts it back for the caller.
func peekNoSpace(resp *http.Response) bool {
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, peekLimit))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), errReader{err}, resp.Body), resp.Body}
	return bytes.Contains(head, []byte(etcdNoSpace))
}

type readCloser struct {
	io.Reader
	io.Closer
}

// errReader hands the caller a read error met while peeking, in its
// place; nil reads as the end of the peeked part.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}
