package admin

import "github.com/switchboard/switchboard/pkg/textcheck"

// label is INVALID_ARGUMENT naming field when s, a name or other label a
// person reads in the console (a display name, an email, a credential's
// name), holds a character that is invisible or reorders the text around
// it (textcheck.Label): with one, two names could look alike or one read as
// another. nil otherwise.
func label(field, s string) error {
	if err := textcheck.Label(s); err != nil {
		return invalid(field, err.Error())
	}
	return nil
}

// prose is label for multi-line free text (a description): line breaks and
// tabs pass (textcheck.Prose).
func prose(field, s string) error {
	if err := textcheck.Prose(s); err != nil {
		return invalid(field, err.Error())
	}
	return nil
}
