package protocol

// RaiseFenceScript lets the tests send tokens RaiseFence refuses before
// sending, as another implementation could.
var RaiseFenceScript = raiseFenceScript
