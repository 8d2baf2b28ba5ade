package verify

// githubVerifier checks X-Hub-Signature-256. The legacy SHA-1 X-Hub-Signature
// header is deliberately ignored.
type githubVerifier struct{ secrets [][]byte }

func (v githubVerifier) Verify(r Request) (Result, error) {
	header, err := singleHeader(r.Header, "X-Hub-Signature-256")
	if err != nil {
		return Result{}, err
	}
	sig, err := hexSHA256("github", header, "sha256=", "signature lacks sha256= prefix")
	if err != nil {
		return Result{}, err
	}
	if err := sha256Matches("github", v.secrets, sig, r.Body); err != nil {
		return Result{}, err
	}
	return Result{Scheme: SchemeGitHub, DeliveryID: r.Header.Get("X-GitHub-Delivery")}, nil
}
