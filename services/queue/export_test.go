package queue

// Backoff exposes the retry delay formula to the external tests.
var Backoff = backoff
