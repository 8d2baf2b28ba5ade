// Package buildinfo reports what binary is running.
package buildinfo

import "runtime/debug"

// Version and Revision are set at link time (`make build` passes
// -ldflags "-X …/buildinfo.Version=$(git describe) -X …/buildinfo.Revision=$(git rev-parse HEAD)").
// Unset, Get falls back to the VCS data the go command embeds in a build
// from a git checkout (vcs.revision, vcs.modified).
var (
	Version  = ""
	Revision = ""
)

// Info describes the running binary.
type Info struct {
	Version   string
	Revision  string
	Modified  bool
	GoVersion string
}

// Get returns the build information.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return resolve(Version, Revision, bi)
}

// shortRevision is how many hex digits of a commit name a version, as
// `git describe --always` prints them.
const shortRevision = 7

// resolve combines the link-time values with the embedded build info (nil
// when there is none): link-time values win; without a version, a build
// from a git checkout is named by its short revision, "-dirty" when the
// work tree had changes, and anything else is "dev".
func resolve(version, revision string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Revision: revision}
	var vcsRevision string
	if bi != nil {
		info.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRevision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Revision == "" {
		info.Revision = vcsRevision
	}
	if info.Version == "" && vcsRevision != "" {
		info.Version = vcsRevision[:min(len(vcsRevision), shortRevision)]
		if info.Modified {
			info.Version += "-dirty"
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}
