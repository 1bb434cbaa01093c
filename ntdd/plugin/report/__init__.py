"""`--ntdd-report`: the page of the run, gathered from the records and the ledger
(`writer`), its values (`values`), where each test sits (`places`), the parameters'
pins (`pins`), and the page itself (`html`, with markdown cells and outputs cleaned
by `markdown`, their ids and classes kept out of the page's by `names`, and the page's
own style sheets allowed by `styles`)."""
