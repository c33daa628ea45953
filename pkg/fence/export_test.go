package fence

import "github.com/redlease/redlease/internal/protocol"

// WriteScript lets the tests send tokens Write never sends, as another
// implementation could.
var WriteScript = protocol.FenceWriteScript
