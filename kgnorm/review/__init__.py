"""People's decisions on what kgnorm wrote: reviews of mentions (kgnorm.review.records), the
journal that keeps them while another process writes the store (kgnorm.review.journal), and what
the review pages and the API show (kgnorm.review.views)."""
