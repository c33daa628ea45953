package fence

// WriteScript lets the tests send tokens Write never sends, as another
// implementation could.
var WriteScript = writeScript
