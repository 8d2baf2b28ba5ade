package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func vcs(revision, modified string) *debug.BuildInfo {
	return &debug.BuildInfo{GoVersion: "go1.26", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified},
	}}
}

const rev = "287fd48e5af26e02c58a1533b38c2e40e9c54fcb"

func TestResolve(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		version, revision string
		bi                *debug.BuildInfo
		want              Info
	}{
		"make build: link-time values win": {"v1.2.3-4-gabcdef0", "abcdef0123", vcs(rev, "false"),
			Info{Version: "v1.2.3-4-gabcdef0", Revision: "abcdef0123", GoVersion: "go1.26"}},
		"go build in a clean checkout": {"", "", vcs(rev, "false"),
			Info{Version: "287fd48", Revision: rev, GoVersion: "go1.26"}},
		"go build with local changes": {"", "", vcs(rev, "true"),
			Info{Version: "287fd48-dirty", Revision: rev, Modified: true, GoVersion: "go1.26"}},
		"no VCS data (-buildvcs=false, a tarball)": {"", "", &debug.BuildInfo{GoVersion: "go1.26"},
			Info{Version: "dev", GoVersion: "go1.26"}},
		"no build info at all": {"", "", nil, Info{Version: "dev"}},
	} {
		require.Equal(t, tc.want, resolve(tc.version, tc.revision, tc.bi), name)
	}
}
